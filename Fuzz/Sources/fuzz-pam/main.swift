import CLibFuzzer
import FingersealWire
import FuzzInput
import Glibc
import PAMKit
import SystemKit

// pam_fingerseal's entry points through a real libpam stack (pam_start_confdir), against a
// broker that plays the input's packets (PlayedBroker). Findings: a crash or trap in the
// module, a hang (libFuzzer's -timeout; the module's own bound is backstop=1 per wait), a
// packet from the module that does not decode, and PAM_SUCCESS where the broker's result
// did not say success.
//
// FUZZ_PAM_MODULE: the instrumented module (scripts/build-module --coverage);
// FUZZ_AUTHTOK_MODULE: Helpers/pam_fuzz_authtok.c built (scripts/fuzz builds both).

func required(_ name: String) -> String {
    guard let value = getenv(name) else { fatalError("fuzz-pam: \(name) is not set (run through scripts/fuzz)") }
    return String(cString: value)
}

let modulePath = required("FUZZ_PAM_MODULE")
let authtokPath = required("FUZZ_AUTHTOK_MODULE")
// Loaded once and never unloaded: its coverage counters register with libFuzzer at load, and
// libpam's dlopen and dlclose of each transaction then only count references.
guard dlopen(modulePath, RTLD_NOW | RTLD_GLOBAL) != nil else { fatalError("fuzz-pam: \(String(cString: dlerror()))") }

var template = Array("/tmp/fingerseal-fuzz-pam.XXXXXX".utf8CString)
guard let made = mkdtemp(&template) else { fatalError("fuzz-pam: mkdtemp") }
let directory = String(cString: made)
let broker = PlayedBroker(path: directory + "/socket")
let services = ["fuzz", "fuzz-identify"]
// libFuzzer ends with exit(): the directory goes then.
atexit {
    for name in services + ["socket"] { unlink(directory + "/" + name) }
    rmdir(directory)
}

/// Two stacks: with a user name, and the login screen's `identify` (no user name yet).
for (service, extra) in zip(services, ["", " identify"]) {
    let module = "\(modulePath) socket=\(broker.path) backstop=1"
    let stack = """
        auth optional \(authtokPath)
        auth required \(module)\(extra)
        auth optional \(module) password_used
        account required \(module)
        session required \(module)
        password optional \(authtokPath)
        password required \(module)

        """
    guard let file = fopen(directory + "/" + service, "w") else { fatalError("fuzz-pam: cannot write the stack") }
    fputs(stack, file)
    fclose(file)
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
    PAMInput.run(FuzzInput(data, size), directory: directory, broker: broker)
    return 0
})
