// Runs N pam_start_confdir / authenticate / pam_end cycles in one process and prints the
// thread and descriptor counts after the first cycle and after the last, for the test that
// checks the module leaves its host as it found it (down to the module itself: unloaded at
// pam_end, as a C module is). Not part of the product.
//
//   pam-cycles SERVICE_DIR SERVICE USER CYCLES [PIN]
import Glibc
import PAMKit

func count(_ directory: String) -> Int {
    guard let stream = opendir("/proc/self/" + directory) else { return -1 }
    defer { closedir(stream) }
    var entries = 0
    while let entry = readdir(stream) {
        let first = withUnsafeBytes(of: entry.pointee.d_name) { $0[0] }
        if first != UInt8(ascii: ".") { entries += 1 }
    }
    return entries - (directory == "fd" ? 1 : 0) // the directory stream's own descriptor
}

func signalState() -> String {
    var mask = sigset_t()
    pthread_sigmask(SIG_SETMASK, nil, &mask)
    var action = sigaction()
    sigaction(SIGINT, nil, &action)
    let blocked = (1..<32).filter { sigismember(&mask, $0) == 1 }
    return "blocked=\(blocked) sigint=\(unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self))"
}

/// Whether a mapped file's path contains `name` (/proc/self/maps).
func mapped(_ name: String) -> Bool {
    guard let maps = fopen("/proc/self/maps", "r") else { return true }
    defer { fclose(maps) }
    var line: UnsafeMutablePointer<CChar>? = nil
    var capacity = 0
    defer { free(line) }
    while getline(&line, &capacity, maps) > 0 {
        if let line, String(cString: line).contains(name) { return true }
    }
    return false
}

let arguments = CommandLine.arguments
guard arguments.count >= 5, let cycles = Int(arguments[4]) else {
    print("usage: pam-cycles SERVICE_DIR SERVICE USER CYCLES [PIN]")
    exit(2)
}
let answer = arguments.count > 5 ? arguments[5] : ""
var codes: [Int32: Int] = [:]
var first: (Int, Int, String, String?) = (0, 0, "", nil)
for cycle in 0..<cycles {
    do {
        let client = try PAMClient(service: arguments[2], user: arguments[3], configDirectory: arguments[1]) { message in
            if case .promptEchoOff = message { return answer }
            return nil
        }
        codes[client.authenticate(), default: 0] += 1
    } catch {
        print("pam_start failed: \(error)")
        exit(1)
    }
    if cycle == 0 { first = (count("task"), count("fd"), signalState(), getenv("TSS2_LOG").map { String(cString: $0) }) }
}
let environment = getenv("TSS2_LOG").map { String(cString: $0) }
print("threads \(first.0) \(count("task"))")
print("fds \(first.1) \(count("fd"))")
print("signals \(first.2 == signalState() ? "same" : "changed: \(first.2) -> \(signalState())")")
print("environment \(first.3 == environment ? "same" : "changed")")
print("module \(mapped("pam_fingerseal") ? "still mapped" : "unloaded")")
print("codes \(codes.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ","))")
