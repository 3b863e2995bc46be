import CLinux
import Glibc
import SystemKit
import Testing

/// What a parked connection thread keeps of its last request in its stack (ConnectionThreads,
/// `fs_scrub_stack_below`): nothing. Within the kept depth the pages are zeroed; deeper ones
/// are given back to the kernel.
@Suite struct StackScrubTests {
    /// The bytes a request's frames left, as a test plants them below its own frame.
    static let canary = (0..<64).map { UInt8(0xA0 | ($0 & 0x0F)) }

    /// What the thread saw: each canary as planted, then after the scrub.
    struct Seen: Sendable {
        var plantedNear = false, plantedDeep = false
        var leftNear: [UInt8] = [], leftDeep: [UInt8] = []
    }

    @Test func aParkedThreadKeepsNothingOfItsRequestInItsStack() throws {
        let result = LockedValue<Seen?>(nil)
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let writeEnd = fds[1]
        let started = startDetachedThread {
            defer { close(writeEnd) }
            let low = fs_stack_low()
            var here: UInt8 = 0
            let seen = withUnsafeMutablePointer(to: &here) { frame -> Seen in
                let top = UInt(bitPattern: frame)
                // Below this frame, where a request's deeper frames went: one canary within
                // the kept depth (64 KiB here), one beyond it. Both are in this thread's 8 MiB
                // stack, which nothing below this frame uses while it runs.
                guard low != 0, let near = UnsafeMutablePointer<UInt8>(bitPattern: top - (40 << 10)),
                      let deep = UnsafeMutablePointer<UInt8>(bitPattern: top - (300 << 10)),
                      UInt(bitPattern: deep) > low else { return Seen() }
                near.update(from: StackScrubTests.canary, count: StackScrubTests.canary.count)
                deep.update(from: StackScrubTests.canary, count: StackScrubTests.canary.count)
                var seen = Seen()
                seen.plantedNear = Array(UnsafeBufferPointer(start: near, count: 64)) == StackScrubTests.canary
                seen.plantedDeep = Array(UnsafeBufferPointer(start: deep, count: 64)) == StackScrubTests.canary
                fs_scrub_stack_below(low, 64 << 10)
                seen.leftNear = Array(UnsafeBufferPointer(start: near, count: 64))
                seen.leftDeep = Array(UnsafeBufferPointer(start: deep, count: 64))
                return seen
            }
            result.locked { $0 = seen }
        }
        try #require(started)
        var entries = [pollEntry(fds[0])]
        #expect(waitReady(&entries, until: monotonicSeconds() + 10) == .ready)
        let seen = try #require(result.locked { $0 })
        #expect(seen.plantedNear && seen.plantedDeep)
        #expect(seen.leftNear == [UInt8](repeating: 0, count: 64))
        #expect(seen.leftDeep == [UInt8](repeating: 0, count: 64))
    }
}
