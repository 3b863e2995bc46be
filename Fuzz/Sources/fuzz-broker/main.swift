import CLibFuzzer
import FuzzInput
import Glibc

// The broker's dispatcher in process (Server.serve, as for an accepted connection): request
// sequences over socketpairs, a real store in a temporary directory, no reader and no
// network (the identity provider's address refuses connections). Findings: a crash or trap,
// a hang (libFuzzer's -timeout), a packet from the broker that does not decode, anything
// after the result, and a success the request's conditions rule out (BrokerInput.checked).

// Connections come from root and two test accounts; without them every non-root request
// would be checked against the wrong account.
if let missing = zip(BrokerInput.accountNames, BrokerInput.accountUIDs).first(where: { $0.1 == UInt32.max })?.0 {
    let line = Array("fuzz-broker: the test account \(missing) does not exist (scripts/fuzz makes it with useradd)\n".utf8)
    _ = write(2, line, line.count)
    exit(2)
}

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
