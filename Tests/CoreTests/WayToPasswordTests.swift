import Testing
@testable import Broker

/// How a person at a PAM host turns from the scan to the password (design §2), decided from
/// what the kernel says of the host: the rule as a table, and /proc/PID/stat lines as the
/// kernel writes them. HostTests runs the same hosts for real.
@Suite struct WayToPasswordTests {
    typealias Way = Channel.WayToPassword

    /// Ctrl-C wherever the kernel delivers it to the host (its terminal's foreground process
    /// group, led or not); polkit's agent helper never, in that group or not; the password
    /// beside the scan on a display, whatever the terminal.
    @Test func theWayFollowsTheKernel() {
        let helper = Channel.polkitAgentHelper
        let rows: [(graphical: Bool, inForeground: Bool, program: String, way: Way, host: String)] = [
            (false, true, "sudo", .ctrlC, "sudo in the foreground group, leading it or not (a script's sudo)"),
            (false, true, "login", .ctrlC, "login under sh -c"),
            (false, true, "su", .ctrlC, "su at a terminal"),
            (false, false, "sudo", .emptyAnswer, "sudo in a background job"),
            (false, false, "greetd", .emptyAnswer, "a greeter's worker, no terminal"),
            (false, false, "", .emptyAnswer, "a host the kernel said nothing of"),
            (false, true, helper, .emptyAnswer, "polkit's agent helper in pkexec's foreground group"),
            (false, false, helper, .emptyAnswer, "polkit's agent helper of a desktop's agent, no terminal"),
            (false, true, "polkit-agent-h", .ctrlC, "another program, whose name is not the helper's"),
            (false, true, "pkexec", .ctrlC, "pkexec itself"),
            (true, true, "sudo", .besideTheScan, "a host with a display"),
            (true, false, helper, .besideTheScan, "a host with a display, whatever its program"),
        ]
        for row in rows {
            let host = TerminalStanding(inForeground: row.inForeground, program: row.program)
            #expect(Channel.wayToPassword(graphical: row.graphical, host: host) == row.way, "\(row.host)")
        }
    }

    /// polkit-agent-helper-1 as the kernel names its program: 15 bytes of it.
    @Test func theHelperIsNamedAsTheKernelNamesIt() {
        #expect(Channel.polkitAgentHelper == "polkit-agent-he")
    }

    /// /proc/PID/stat: "pid (comm) state ppid pgrp session tty_nr tpgid …". In the foreground
    /// when the terminal's foreground group (tpgid) is the process's group, whoever leads it.
    @Test func theStandingIsReadFromStat() {
        let tail = " 4194560 96 0 0 0 0 0 0 0 20 0 1 0 123456 1000 100\n"
        let rows: [(stat: String, standing: TerminalStanding?, what: String)] = [
            ("4200 (bash) S 4100 4200 4100 34816 4200" + tail, TerminalStanding(inForeground: true, program: "bash"),
             "the leader of the foreground group"),
            ("4242 (sudo) S 4200 4200 4100 34816 4200" + tail, TerminalStanding(inForeground: true, program: "sudo"),
             "a member that does not lead it (a script's sudo)"),
            ("4243 (sudo) S 4200 4243 4100 34816 4200" + tail, TerminalStanding(inForeground: false, program: "sudo"),
             "a group of its own in the background"),
            ("4244 (polkit-agent-he) S 4200 4200 4100 34816 4200" + tail,
             TerminalStanding(inForeground: true, program: "polkit-agent-he"), "polkit's helper in pkexec's group"),
            ("4245 (a (b) c) S 1 4245 4245 0 -1" + tail, TerminalStanding(inForeground: false, program: "a (b) c"),
             "no terminal (tty_nr 0, tpgid -1), a program whose name holds parentheses and spaces"),
            ("4246 (x) S 1 4246 4246 0 4246" + tail, TerminalStanding(inForeground: false, program: "x"),
             "no terminal, whatever tpgid says"),
            ("garbage", nil, "not a stat line"),
            ("4247 (x) S 1", nil, "cut short"),
        ]
        for row in rows {
            #expect(TerminalStanding(stat: Array(row.stat.utf8)) == row.standing, "\(row.what)")
        }
    }
}
