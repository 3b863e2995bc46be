import Foundation
import Testing
@testable import TestSupport

/// The suite's own preconditions, so that a runner that breaks them gets one clear failure
/// instead of many puzzling ones.
@Suite struct RunnerTests {
    /// The session tests make the sessions they test. Inside the runner's own login session
    /// (an ssh login, a desktop terminal) every child would be a guest in it, and the broker
    /// rightly refuses the test users' grants there. `make check` runs the suite through
    /// `scripts/outside-login-session`; run `swift test` through it too.
    @Test func theSuiteRunsOutsideAnyLoginSession() throws {
        let session = try String(contentsOfFile: "/proc/self/sessionid", encoding: .utf8)
        #expect(session == "4294967295",
                "the tests run in audit session \(session); run them through scripts/outside-login-session")
        // logind finds a process's session by its cgroup (session-N.scope).
        let cgroups = try String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)
        let inSession = cgroups.split(separator: "\n").filter { $0.contains("/session-") && $0.contains(".scope") }
        #expect(inSession.isEmpty, "the tests run in logind's session \(inSession); run them through scripts/outside-login-session")
    }

    /// The tests that share the runner's session (`newSession: false`) need one with a living
    /// leader: without one (session 0 under a service manager, or a leader that exited) the
    /// broker gives each process a session of its own, and nothing is shared.
    @Test func theSuiteRunsInAProcessSessionWithALivingLeader() {
        let leader = getsid(0)
        var info = stat()
        #expect(leader > 0 && stat("/proc/\(leader)", &info) == 0,
                "the tests run in process session \(leader), which has no living leader; run them through scripts/outside-login-session")
    }
}
