import CLibFuzzer
import FuzzInput
import Glibc

// The broker's dispatcher in process (Server.serve, as for an accepted connection): request
// sequences over socketpairs, a real store in a temporary directory, no reader and no
// network (the identity provider's address refuses connections). Findings: a crash or trap,
// a hang (libFuzzer's -timeout), a packet from the broker that does not decode, anything
// after the result, and a success the request's conditions rule out (BrokerInput.checked).

// No reader: libfprint loads no driver, and there is no system bus for fprintd.
setenv("FP_DRIVERS_WHITELIST", "fuzz-no-driver", 1)
setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent", 1)
let harness = BrokerHarness()
atexit { harness.remove() }

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
    harness.run(FuzzInput(data, size))
    return 0
})
