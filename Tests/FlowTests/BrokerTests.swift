import FingersealWire
import Glibc
import Testing
@testable import TestSupport

/// The broker as a server: readiness, hostile clients, and the authorization table of
/// design §2 tried with real processes running as real users.
@Suite(.serialized) struct BrokerTests {
    /// A raw SOCK_SEQPACKET connection to `path` that sends whatever it is given.
    static func rawConnection(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0, withUnixAddress(path, { connect(fd, $0, $1) }) == 0 else { throw TestFailure("connect \(path) failed") }
        return fd
    }

    /// Reads one packet within `timeout`; nil when the broker closed the connection or said nothing.
    static func readPacket(_ fd: Int32, timeout: Int32 = 10_000) -> [UInt8]? {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, timeout) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: Wire.maxPacket + 1)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? Array(buffer[..<count]) : nil
    }

    @Test func hostileClientsDoNotStopOthers() throws {
        let broker = try TestBroker()
        var hostile: [Int32] = []
        defer { hostile.forEach { close($0) } }
        // Garbage, a truncated field, an oversized packet, a silent client, one that leaves mid-request.
        let packets: [[UInt8]] = [
            Array("GET / HTTP/1.0\r\n\r\n".utf8),
            [0x46, 0x53, Wire.version, 1, 7, 0x63, 0x6f, 0x6d, 0x6d, 0x61, 0x6e, 0x64, 0xff, 0xff, 0, 0],
            [UInt8](repeating: 0x41, count: Wire.maxPacket + 100),
        ]
        for packet in packets {
            let fd = try Self.rawConnection(broker.socketPath)
            hostile.append(fd)
            _ = packet.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        hostile.append(try Self.rawConnection(broker.socketPath)) // says nothing
        let leaving = try Self.rawConnection(broker.socketPath)
        let request = Request(.pamAuthenticate, from: .pamHost(PAMItems(user: "root", service: "test", tty: "/dev/pts/9"),
                                                               moduleArguments: []))
        _ = ClientMessage.request(request).encoded().withUnsafeBytes { send(leaving, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        close(leaving)

        // Everyone else is still served, at once.
        let started = VirtualSensor.now()
        let served = try broker.wire(["pam.account", "pam.user=root"])
        #expect(served.stdout.contains("result: notApplicable"), "\(served.all)")
        #expect(VirtualSensor.now() - started < 3)
        // The garbage senders were dropped without an answer that could be mistaken for one.
        for fd in hostile.prefix(3) {
            if let packet = Self.readPacket(fd, timeout: 3000) {
                let message = try? packet.withUnsafeBytes { try BrokerMessage.decode($0) }
                if case let .result(reply)? = message { #expect(reply.outcome != .success) }
            }
        }
        #expect(broker.process != nil)
        #expect(kill(broker.process?.pid ?? 0, 0) == 0, "the broker is still running")
    }

    @Test func anotherProtocolVersionIsToldSo() throws {
        let broker = try TestBroker()
        let fd = try Self.rawConnection(broker.socketPath)
        defer { close(fd) }
        var packet = ClientMessage.request(Request(.status)).encoded()
        packet[2] = Wire.version + 1
        _ = packet.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let answer = try #require(Self.readPacket(fd))
        guard case let .result(reply) = try answer.withUnsafeBytes({ try BrokerMessage.decode($0) }) else {
            Issue.record("no result")
            return
        }
        #expect(reply.outcome == .usage)
        #expect(reply.message.contains("version"))
    }

    @Test func theBrokerIsAbsentTheClientIsToldAtOnce() throws {
        let temp = try TempDirectory()
        let started = VirtualSensor.now()
        #expect(throws: ConnectionError.self) { try WireConnection.connect(path: temp.file("none"), timeout: 2) }
        #expect(VirtualSensor.now() - started < 0.1)
    }

    // MARK: the authorization table

    @Test(.enabled(if: getuid() == 0)) func aUserActsOnlyForThemselves() throws {
        try #require(TestUsers.ensure(TestUsers.alice) && TestUsers.ensure(TestUsers.bob))
        let broker = try TestBroker()
        // A PAM host running as the user (a lock screen): for that user only.
        let own = try broker.wire(["pam.account", "pam.user=\(TestUsers.alice)"], as: TestUsers.alice)
        #expect(own.stdout.contains("result: notApplicable"), "\(own.all)")
        let other = try broker.wire(["pam.authenticate", "pam.user=\(TestUsers.bob)"], as: TestUsers.alice)
        #expect(other.stdout.contains("result: notPermitted"), "\(other.all)")
        let rootAccount = try broker.wire(["pam.open-session", "pam.user=root"], as: TestUsers.alice)
        #expect(rootAccount.stdout.contains("result: notPermitted"), "\(rootAccount.all)")
        // The CLI's commands: a user cannot name another account.
        let named = try broker.wire(["status", "value=--user=\(TestUsers.bob)"], as: TestUsers.alice)
        #expect(named.stdout.contains("result: notPermitted"), "\(named.all)")
        // Root (a PAM host, an administrator) may act for anyone.
        let host = try broker.wire(["pam.account", "pam.user=\(TestUsers.bob)"])
        #expect(host.stdout.contains("result: notApplicable"), "\(host.all)")
        let admin = try broker.wire(["status", "value=--user=\(TestUsers.bob)"])
        #expect(!admin.stdout.contains("notPermitted"), "\(admin.all)")
    }

    @Test(.enabled(if: getuid() == 0)) func rigCommandsNeedRootOrTheRigGroup() throws {
        try #require(TestUsers.ensure(TestUsers.alice) && TestUsers.ensure(TestUsers.bob))
        #expect(Child.runQuietly("/usr/sbin/groupadd", ["-f", "fingerseal-rig"]) == 0)
        #expect(Child.runQuietly("/usr/sbin/usermod", ["-a", "-G", "fingerseal-rig", TestUsers.bob]) == 0)
        #expect(Child.runQuietly("/usr/bin/gpasswd", ["-d", TestUsers.alice, "fingerseal-rig"]) >= 0)
        let broker = try TestBroker()
        for command in ["capture", "selftest"] {
            let outsider = try broker.wire([command], as: TestUsers.alice)
            #expect(outsider.stdout.contains("result: notPermitted"), "\(command): \(outsider.all)")
            #expect(outsider.stdout.contains("fingerseal-rig"))
            let member = try broker.wire([command], as: TestUsers.bob)
            #expect(member.stdout.contains("result: ") && !member.stdout.contains("notPermitted"), "\(command): \(member.all)")
        }
    }

    @Test func theStoreIsRootsAndNotInAnyHome() throws {
        let broker = try TestBroker()
        var info = stat()
        #expect(stat(broker.state, &info) == 0)
        #expect(info.st_uid == geteuid())
        #expect(info.st_mode & 0o777 == 0o700)
    }
}

/// What the broker says to whom: graphical hosts are never told to press Ctrl-C, and a
/// request no person can answer gets neither a scan nor a PIN question.
@Suite(.serialized) struct BrokerPromptTests {
    static let pin = "4826"

    /// A broker with the virtual reader and root's vault with one finger.
    static func enrolledHome() throws -> CLIHome {
        let home = try CLIHome(reader: true)
        #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: pin + "\n").status == 0)
        try home.enroll("finger-a", pin: pin)
        return home
    }

    /// As a root PAM host leading a terminal's foreground, where Ctrl-C reaches it.
    static func authenticate(_ home: CLIHome, _ items: [String]) throws -> Child.Result {
        try home.broker.wire(["pam.authenticate", "pam.user=root"] + items + ["option=timeout=1", "option=pin"], terminal: .leader)
    }

    @Test func graphicalHostsAreNotToldToPressCtrlC() throws {
        let home = try Self.enrolledHome()
        let terminal = try Self.authenticate(home, [])
        #expect(terminal.stdout.contains("info: Swipe your finger across the reader, or press Ctrl-C to use your password."),
                "\(terminal.all)")
        for items in [["pam.xdisplay=:0"], ["pam.tty=/dev/tty1", "pam.service=gdm-fingerprint"], ["pam.tty=:1"]] {
            let graphical = try Self.authenticate(home, items)
            #expect(graphical.stdout.contains("info: Swipe your finger across the reader, or use your password."),
                    "\(items): \(graphical.all)")
            #expect(!graphical.stdout.contains("Ctrl-C"), "\(items): \(graphical.all)")
        }
    }

    /// The broker, not the host, decides whether Ctrl-C is named: from /proc, for the real
    /// process that asks (root here, filling in the same PAM items each time). A host in its
    /// terminal's foreground process group hears of it, whether it leads the group (sudo at an
    /// interactive shell) or not (a script's sudo: the kernel sends Ctrl-C to the whole group).
    /// In the background, or with no terminal, the host is asked one question while the reader
    /// waits, and nothing before it saying the same (one sentence per prompt); Enter alone ends
    /// the scan at once, nothing counted.
    @Test func ctrlCIsNamedToEveryHostInATerminalsForeground() throws {
        let home = try Self.enrolledHome()
        let sensor = try #require(home.sensor)
        let request = [home.broker.socketPath, "pam.authenticate", "pam.user=root", "pam.tty=/dev/pts/0", "option=timeout=30"]
        for placement: TerminalPlacement in [.leader, .follower] {
            let host = try Child(Paths.buildDirectory + "/wire-client", request, terminal: placement)
            var prompt: String? = nil
            while prompt == nil, let line = host.readLine() {
                if line.hasPrefix("info: ") || line.hasPrefix("ask: ") { prompt = line }
            }
            #expect(prompt == "info: Swipe your finger across the reader, or press Ctrl-C to use your password.", "\(placement)")
            try VirtualSensor.send("SCAN finger-a", to: sensor)
            let matched = host.finish(limit: 30)
            #expect(matched.stdout.contains("result: success") && !matched.stdout.contains("ask: "), "\(placement): \(matched.all)")
        }
        // Nothing to type but Enter: no PIN is taken (purpose other).
        let question = "ask: secret other Swipe your finger across the reader and press Enter, or press Enter alone for your password: "
        for placement: TerminalPlacement? in [.background, nil] {
            let started = VirtualSensor.now()
            // No answer given: wire-client answers the question with Enter alone.
            let result = try Child.run(Paths.buildDirectory + "/wire-client", request, terminal: placement)
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first == question, "\(String(describing: placement)): \(result.all)")
            #expect(lines.last?.hasPrefix("result: cancelled") == true, "\(String(describing: placement)): \(result.all)")
            #expect(!result.all.contains("Ctrl-C"), "\(String(describing: placement)): \(result.all)")
            #expect(VirtualSensor.now() - started < 5, "Enter alone took \(VirtualSensor.now() - started) s")
        }
        #expect(try home.run(["status"]).stdout.contains("failed scans in a row: 0"))
    }

    /// polkit's agent helper is told apart by its program, as the kernel names it: a host
    /// named polkit-agent-helper-1 in its terminal's foreground group (pkexec's text agent,
    /// whose Ctrl-C would end pkexec) is asked the question, never told to press Ctrl-C. Here
    /// a copy of wire-client under that name, in the group its parent leads, as pkexec's
    /// helper is.
    @Test func polkitsAgentHelperIsAskedTheQuestionInTheForeground() throws {
        let home = try Self.enrolledHome()
        // The helper sets no PAM_TTY; it runs in the person's login session, which the build
        // machines have none of: the service is named as one a person answers.
        writeFile(home.broker.config, Array("interactive_services=polkit-1\n".utf8), mode: 0o644)
        let temp = try TempDirectory()
        let helper = temp.file("polkit-agent-helper-1")
        let copied = try Child.run("/bin/cp", [Paths.buildDirectory + "/wire-client", helper])
        try #require(copied.status == 0, "\(copied.all)")
        let request = [home.broker.socketPath, "pam.authenticate", "pam.user=root", "pam.service=polkit-1", "option=timeout=30"]
        let result = try Child.run(helper, request, terminal: .follower)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "ask: secret other Swipe your finger across the reader and press Enter, or press Enter alone for your password: ",
                "\(result.all)")
        #expect(lines.last?.hasPrefix("result: cancelled") == true, "\(result.all)")
        #expect(!result.all.contains("Ctrl-C"), "\(result.all)")
    }

    @Test func nobodyToAnswerMeansNoScanAndNoPIN() throws {
        let home = try Self.enrolledHome()
        // No tty, no display, and the caller (a process session of its own) is in no login session.
        let unattended = try Self.authenticate(home, ["pam.tty=", "pam.service=smtp"])
        #expect(unattended.stdout.contains("result: unavailable"), "\(unattended.all)")
        #expect(!unattended.stdout.contains("info:") && !unattended.stdout.contains("ask:"), "\(unattended.all)")
        // The administrator can name a service either way.
        let config = "interactive_services=vpn\nunattended_services=sshd-batch\n"
        writeFile(home.broker.config, Array(config.utf8), mode: 0o644)
        let named = try Self.authenticate(home, ["pam.tty=", "pam.service=vpn"])
        #expect(named.stdout.contains("info: Swipe your finger"), "\(named.all)")
        let never = try Self.authenticate(home, ["pam.service=sshd-batch"])
        #expect(never.stdout.contains("result: unavailable") && !never.stdout.contains("info:"), "\(never.all)")
    }
}

/// The reader serves one request at a time; the next one waits, and is told why.
@Suite struct BrokerReaderTurnTests {
    @Test func aSecondRequestWaitsForTheReaderAndIsToldWhy() throws {
        let home = try BrokerPromptTests.enrolledHome()
        let sensor = try #require(home.sensor)
        let wire = Paths.buildDirectory + "/wire-client"
        // Hosts at a terminal: the scan alone, no question while the reader waits.
        let first = try Child(wire, [home.broker.socketPath, "pam.authenticate", "pam.user=root", "option=timeout=20"],
                              terminal: .leader)
        // The first request holds the reader once it prompts.
        while let line = first.readLine(), !line.hasPrefix("info: Swipe") {}
        let second = try Child(wire, [home.broker.socketPath, "pam.authenticate", "pam.user=root", "option=timeout=20"],
                               terminal: .leader)
        // The second is told that it waits before it may prompt.
        var told = false
        while let line = second.readLine() {
            if line == "info: The fingerprint reader is busy with another request. Waiting for it." { told = true; break }
            if line.hasPrefix("info: Swipe") || line.hasPrefix("result:") { break }
        }
        #expect(told)
        try VirtualSensor.send("SCAN finger-a", to: sensor)
        let firstResult = first.finish(limit: 30)
        #expect(firstResult.stdout.contains("result: success"), "\(firstResult.all)")
        // Now the second has the reader: it prompts, and a finger answers it too.
        while let line = second.readLine(), !line.hasPrefix("info: Swipe") {}
        try VirtualSensor.send("SCAN finger-a", to: sensor)
        let secondResult = second.finish(limit: 30)
        #expect(secondResult.stdout.contains("result: success"), "\(secondResult.all)")
    }
}
