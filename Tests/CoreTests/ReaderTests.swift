@testable import FprintKit
import Glibc
import ReaderValues
import Testing
@testable import TestSupport

/// Every in-process libfprint test: the drivers read their environment when a context is
/// created, and the environment is process-wide, so these suites run one test at a time.
@Suite(.serialized) enum InProcessLibfprint {}

/// The reader layer in-process, on libfprint's virtual drivers.
extension InProcessLibfprint {
@Suite(.serialized) struct ReaderTests {
    /// Sets the driver environment for one test and removes it afterwards.
    final class VirtualEnvironment {
        let temp: TempDirectory
        let socket: String
        private let variable: String

        init(driver: String, variable: String) throws {
            temp = try TempDirectory()
            socket = temp.file("sensor.sock")
            self.variable = variable
            setenv("FP_DRIVERS_WHITELIST", driver, 1)
            setenv(variable, socket, 1)
        }

        deinit {
            unsetenv(variable)
            unsetenv("FP_DRIVERS_WHITELIST")
        }
    }

    /// Whether the thread `id` of this process is alive. The reader's own worker thread, not
    /// a count of threads: the test runner's pool and other suites' readers come and go.
    func threadAlive(_ id: pid_t) -> Bool { access("/proc/self/task/\(id)", F_OK) == 0 }

    /// Whether the thread is gone within a second: a joined thread's task lingers in /proc
    /// for the instant between the join's wake-up (its tid cleared) and its release, which a
    /// loaded machine stretches. A thread that was not joined stays.
    func threadEnds(_ id: pid_t) -> Bool {
        let deadline = VirtualSensor.now() + 1
        while threadAlive(id) {
            if VirtualSensor.now() > deadline { return false }
            sched_yield()
        }
        return true
    }

    func enroll(_ reader: LibfprintDevice, id: String, sensor: String) throws -> Print {
        let operation = try reader.enroll(finger: .rightIndex, username: "tester", description: id)
        var progress: [Int] = []
        for _ in 0..<reader.enrollStages {
            try VirtualSensor.send("SCAN \(id)", to: sensor)
        }
        let result = operation.wait(timeout: 10) { event in
            if case let .enrollProgress(completed, _) = event { progress.append(completed) }
        }
        guard case let .enrolled(print) = result else { throw TestFailure("enroll ended with \(result)") }
        #expect(progress == Array(1...reader.enrollStages))
        return print
    }

    @Test func missingReaderIsReportedAtOnce() throws {
        setenv("FP_DRIVERS_WHITELIST", "virtual_device", 1)
        defer { unsetenv("FP_DRIVERS_WHITELIST") }
        unsetenv("FP_VIRTUAL_DEVICE")
        let start = VirtualSensor.now()
        #expect(throws: FprintError.noReader) { _ = try LibfprintDevice() }
        #expect(VirtualSensor.now() - start < 1)
    }

    @Test func enrollMatchAndNoMatch() throws {
        let env = try VirtualEnvironment(driver: "virtual_device", variable: "FP_VIRTUAL_DEVICE")
        // The reader's worker thread runs while it is open and is joined by close.
        var worker: pid_t = 0
        do {
            let reader = try LibfprintDevice()
            worker = try #require(reader.workerThreadID)
            #expect(threadAlive(worker), "an open reader has its worker thread")
            #expect(reader.info.driver == "virtual_device")
            #expect(reader.enrollStages == 5)
            let print = try enroll(reader, id: "finger-a", sensor: env.socket)
            #expect(print.finger == .rightIndex && print.username == "tester")

            // The print survives serialization, as the vault stores it.
            let stored = try Print(serialized: try print.serialize())
            let match = try reader.verify(stored)
            try VirtualSensor.send("SCAN finger-a", to: env.socket)
            guard case .verified(matched: true) = match.wait(timeout: 10) else { throw TestFailure("no match") }

            let miss = try reader.verify(stored)
            try VirtualSensor.send("SCAN finger-b", to: env.socket)
            guard case .verified(matched: false) = miss.wait(timeout: 10) else { throw TestFailure("matched") }
            reader.close()
        }
        #expect(threadEnds(worker), "the worker thread must be joined on close")
    }

    /// A reader that does not confirm its close in time is reported (the self-test's close
    /// step): the virtual device takes a SLEEP queued while idle at its close.
    @Test func closeReportsAReaderThatDidNotConfirm() throws {
        let env = try VirtualEnvironment(driver: "virtual_device", variable: "FP_VIRTUAL_DEVICE")
        let slow = try LibfprintDevice()
        try VirtualSensor.send("SLEEP 3000", to: env.socket)
        #expect(slow.close(timeout: 1) == false)
        let quick = try LibfprintDevice()
        #expect(quick.close(timeout: 5))
    }

    @Test func retryHintReachesTheCaller() throws {
        let env = try VirtualEnvironment(driver: "virtual_device", variable: "FP_VIRTUAL_DEVICE")
        let reader = try LibfprintDevice()
        let print = try enroll(reader, id: "finger-a", sensor: env.socket)
        let operation = try reader.verify(print)
        try VirtualSensor.send("RETRY 1", to: env.socket) // FP_DEVICE_RETRY_TOO_SHORT
        var hints: [RetryHint] = []
        let result = operation.wait(timeout: 10) { if case let .hint(hint) = $0 { hints.append(hint) } }
        guard case .failed(.retry(.tooShort)) = result else { throw TestFailure("got \(result)") }
        #expect(hints == [.tooShort])
    }

    @Test func deviceErrorIsClean() throws {
        let env = try VirtualEnvironment(driver: "virtual_device", variable: "FP_VIRTUAL_DEVICE")
        let reader = try LibfprintDevice()
        let print = try enroll(reader, id: "finger-a", sensor: env.socket)
        let operation = try reader.verify(print)
        try VirtualSensor.send("ERROR 5", to: env.socket) // FP_DEVICE_ERROR_PROTO
        guard case .failed(.device(.protocolError, _, _)) = operation.wait(timeout: 10) else {
            throw TestFailure("expected a protocol error")
        }
    }

    @Test func cancelDuringVerify() throws {
        let env = try VirtualEnvironment(driver: "virtual_device", variable: "FP_VIRTUAL_DEVICE")
        let reader = try LibfprintDevice()
        let print = try enroll(reader, id: "finger-a", sensor: env.socket)
        let operation = try reader.verify(print)
        let start = VirtualSensor.now()
        operation.cancel()
        guard case .failed(.cancelled) = operation.wait(timeout: 10) else { throw TestFailure("not cancelled") }
        #expect(VirtualSensor.now() - start < 1)
        // The reader is usable afterwards.
        let again = try reader.verify(print)
        try VirtualSensor.send("SCAN finger-a", to: env.socket)
        guard case .verified(matched: true) = again.wait(timeout: 10) else { throw TestFailure("no match after cancel") }
    }

    @Test func deadlineGivesTimeout() throws {
        let env = try VirtualEnvironment(driver: "virtual_device", variable: "FP_VIRTUAL_DEVICE")
        let reader = try LibfprintDevice()
        let print = try enroll(reader, id: "finger-a", sensor: env.socket)
        let operation = try reader.verify(print)
        try VirtualSensor.send("SLEEP 3000", to: env.socket)
        let start = VirtualSensor.now()
        guard case .failed(.timedOut) = operation.wait(timeout: 0.5) else { throw TestFailure("no timeout") }
        #expect(VirtualSensor.now() - start < 0.5 + ReaderOperation.cancelGrace)
    }

    /// libfprint marks a reader unplugged while nothing runs on it (a dock taken away between
    /// requests): `isRemoved` says so, so the broker opens what is connected instead.
    @Test func unplugWhileIdleIsNoticed() throws {
        let env = try VirtualEnvironment(driver: "virtual_device", variable: "FP_VIRTUAL_DEVICE")
        let reader = try LibfprintDevice()
        defer { reader.close() }
        #expect(!reader.isRemoved())
        #expect(!reader.isRemoved(), "asking twice changes nothing")
        try VirtualSensor.send("UNPLUG", to: env.socket)
        #expect(ReaderBroker.waitUntil(5) { reader.isRemoved() })
    }

    @Test func unplugDuringVerify() throws {
        let env = try VirtualEnvironment(driver: "virtual_device", variable: "FP_VIRTUAL_DEVICE")
        let reader = try LibfprintDevice()
        let print = try enroll(reader, id: "finger-a", sensor: env.socket)
        let operation = try reader.verify(print)
        try VirtualSensor.send("UNPLUG", to: env.socket)
        let result = operation.wait(timeout: 10)
        guard case .failed(.device(.removed, _, _)) = result else { throw TestFailure("got \(result)") }
        reader.close()
    }
}
}
