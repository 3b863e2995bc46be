import CLibFuzzer
import Glibc

// SwiftPM gives executables their own entry point, so hand control to libFuzzer's driver.
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzParsers(data, size) })
