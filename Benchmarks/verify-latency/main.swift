// Verify latency through fingerseal's reader layer (FprintKit), on libfprint's virtual
// drivers: the same measurement as Benchmarks/c-baseline/verify-latency.c, which makes the
// calls directly in C, so the two medians in one run give the layer's overhead.
//
//   verify-latency virtual_device|virtual_image [runs]
import BenchSupport
import FprintKit
import Glibc

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func fixture(_ name: String) -> [UInt8] {
    let directory = getenv("FIXTURES_DIR").map { String(cString: $0) } ?? "Tests/Fixtures/prints"
    let fd = open(directory + "/" + name, O_RDONLY)
    if fd < 0 { fail("fixture \(name) not found (set FIXTURES_DIR)") }
    defer { close(fd) }
    var bytes: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(fd, &chunk, chunk.count)
        if count <= 0 { break }
        bytes += chunk[..<count]
    }
    return bytes
}

func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written <= 0 { fail("write to virtual_image failed") }
        offset += written
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 2, ["virtual_device", "virtual_image"].contains(arguments[1]) else {
    fail("usage: verify-latency virtual_device|virtual_image [runs]")
}
let driver = arguments[1]
let runs = arguments.count > 2 ? Int(arguments[2]) ?? 50 : 50
var template = Array("/tmp/fingerseal-latency-XXXXXX".utf8CString)
guard let made = mkdtemp(&template) else { fail("mkdtemp") }
let socketPath = String(cString: made) + "/sensor.sock"
setenv("FP_DRIVERS_WHITELIST", driver, 1)
setenv(driver == "virtual_device" ? "FP_VIRTUAL_DEVICE" : "FP_VIRTUAL_IMAGE", socketPath, 1)

do {
    let reader = try LibfprintDevice()
    var times: [Double] = []
    if driver == "virtual_device" {
        let enroll = try reader.enroll(finger: .rightIndex, username: "bench", description: "bench")
        for _ in 0..<reader.enrollStages { command("SCAN bench", socketPath) }
        guard case let .enrolled(print) = enroll.wait(timeout: 10) else { fail("enroll failed") }
        for _ in 0..<runs {
            let start = now()
            let operation = try reader.verify(print)
            command("SCAN bench", socketPath)
            guard case .verified(matched: true) = operation.wait(timeout: 10) else { fail("no match") }
            times.append((now() - start) * 1000)
        }
    } else {
        let sensor = connectSocket(socketPath)
        let enrollImage = fixture("whorl.fpimg"), second = fixture("whorl_dx12_dy-8_rot10.fpimg")
        let enroll = try reader.enroll(finger: .rightIndex, username: "bench", description: "bench")
        let enrolled = enroll.wait(timeout: 60) { if case .fingerNeeded = $0 { sendAll(sensor, enrollImage) } }
        guard case let .enrolled(print) = enrolled else { fail("enroll failed") }
        for _ in 0..<runs {
            let start = now()
            let operation = try reader.verify(print)
            let result = operation.wait(timeout: 30) { if case .fingerNeeded = $0 { sendAll(sensor, second) } }
            guard case .verified(matched: true) = result else { fail("no match") }
            times.append((now() - start) * 1000)
        }
        close(sensor)
    }
    reader.close()
    let sorted = times.sorted()
    let median = sorted[sorted.count / 2], p95 = sorted[min(sorted.count - 1, sorted.count * 95 / 100)]
    func two(_ value: Double) -> String { String(Double(Int((value * 100).rounded())) / 100) }
    print("fingerseal \(driver): median \(two(median)) ms, p95 \(two(p95)) ms over \(runs) runs")
} catch {
    fail("\(error)")
}
