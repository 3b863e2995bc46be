import Glibc
import Testing
@testable import TestSupport

/// The built `fingerseal` binary, run as a user would against a broker of its own, output
/// compared. The vault is the broker's (root's store, uid 0 here), never under the home.
@Suite struct CLITests {
    typealias Home = CLIHome

    @Test func versionAndHelpOnEveryCommandWithoutABroker() throws {
        let temp = try TempDirectory()
        let environment = noBrokerEnvironment(temp)
        let version = try Child.run(Paths.cli, ["--version"], environment: environment)
        #expect(version.status == 0)
        #expect(version.stdout.hasPrefix("fingerseal "))
        for command in [[], ["status"], ["pin"], ["pin", "set"], ["pin", "change"], ["reset"], ["login"], ["unlock"], ["token"]] {
            let help = try Child.run(Paths.cli, command + ["--help"], environment: environment)
            #expect(help.status == 0)
            #expect(help.stdout.contains("Usage: fingerseal"), "\(command)")
            #expect(help.stdout.contains("--help"))
            if command != [] && command != ["pin"] {
                #expect(help.stdout.contains("--socket PATH"), "every command can be pointed at a broker: \(command)")
            }
        }
    }

    @Test func usageErrorsExitTwoWithoutABroker() throws {
        let temp = try TempDirectory()
        for arguments in [["bogus"], ["status", "--bogus"], ["pin", "set", "--pin-fd"], ["pin", "set", "--pin-fd", "x"],
                          ["status", "extra"], ["pin", "set", "--pin-fd", "250"], ["login", "--flow", "bogus"],
                          ["login", "--user"], ["unlock", "--exec"], ["proofread", "--help"], ["pin", "bogus", "-h"]] {
            let result = try Child.run(Paths.cli, arguments, environment: noBrokerEnvironment(temp))
            #expect(result.status == 2, "\(arguments): \(result.all)")
            #expect(result.stderr.contains("fingerseal: error:"))
            #expect(!result.stderr.contains("service"), "a usage error is found before the broker is asked: \(result.stderr)")
            if arguments.contains(where: { $0.hasPrefix("-h") || $0 == "--help" }) {
                #expect(result.stderr.contains("Unknown command") && !result.stdout.contains("Usage:"), "\(arguments): \(result.all)")
            }
        }
    }

    /// No broker (not installed, not running, socket missing): exit 8 with a sentence, at once.
    @Test func noBrokerIsExitEightWithASentence() throws {
        let temp = try TempDirectory()
        let started = VirtualSensor.now()
        for arguments in [["status"], ["pin", "set", "--pin-fd", "3"], ["unlock"], ["token"]] {
            let result = try Child.run(Paths.cli, arguments, environment: noBrokerEnvironment(temp), fd3: Array("4321\n".utf8))
            #expect(result.status == 8, "\(arguments): \(result.all)")
            #expect(result.stderr == "fingerseal: error: The fingerseal service is not running. "
                    + "Start it with: systemctl start fingerseal.socket\n", "\(result.all)")
            #expect(result.stdout.isEmpty)
        }
        #expect(VirtualSensor.now() - started < 5, "no broker is told at once")
        // --socket names the broker too, and wins over FINGERSEAL_SOCKET.
        let broker = try TestBroker()
        let pointed = try Child.run(Paths.cli, ["status", "--socket", broker.socketPath], environment: noBrokerEnvironment(temp))
        #expect(pointed.status == 6, "\(pointed.all)")
        var wrong = broker.clientEnvironment
        let missing = try Child.run(Paths.cli, ["status", "--socket", temp.file("none")], environment: wrong)
        #expect(missing.status == 8, "\(missing.all)")
        // Nothing else (no default socket, no environment) leads to a broker.
        wrong["FINGERSEAL_SOCKET"] = nil
        wrong["XDG_RUNTIME_DIR"] = broker.temp.path
        if access("/run/fingerseal/socket", F_OK) != 0 {
            let unset = try Child.run(Paths.cli, ["status"], environment: wrong)
            #expect(unset.status == 8, "\(unset.all)")
        }
    }

    @Test func statusBeforeAndAfterSetup() throws {
        let home = try Home()
        let none = try home.run(["status", "--json"])
        #expect(none.status == 6)
        #expect(none.stdout.contains("\"vault\" : false"))
        #expect(none.stdout.contains("\"directory\" : \"\(home.vaultDirectory)\""), "\(none.stdout)")
        #expect(none.stderr.contains("fingerseal pin set"))

        // Root needs no account password to create its vault.
        let set = try home.run(["pin", "set", "--pin-fd", "3"], fd3: "4321\n")
        #expect(set.status == 0, "\(set.all)")
        #expect(set.stdout.contains("The PIN is set."))
        let status = try home.run(["status"])
        #expect(status.status == 0)
        #expect(status.stdout.contains("Vault: \(home.vaultDirectory)\n"), "\(status.stdout)")
        #expect(status.stdout.contains("device key protected by file permissions only"))
        #expect(status.stdout.contains("PIN: set"))
        #expect(status.stdout.contains("Enabled since "))
        #expect(status.stdout.contains("Last verified: never."), "\(status.stdout)")
        #expect(status.stdout.contains("Fingers enrolled: none"))
        #expect(status.stdout.contains("Sign-in: not signed in"))
        let json = try home.run(["status", "--json"])
        #expect(json.stdout.contains("\"pin_set\" : true"))
        #expect(json.stdout.contains("\"protection\" : \"file-permissions\""))
        #expect(json.stdout.contains("\"directory\" : \"\(home.vaultDirectory)\""))
        #expect(!json.stdout.contains("\u{1b}["))
        // The store is the broker's: root's, owner-only; nothing in the home or XDG directories.
        #expect(readFile(home.vaultFile) != nil)
        home.storeIsRootOnly()
        #expect(home.leftInHome().isEmpty, "\(home.leftInHome())")
    }

    /// XDG_STATE_HOME, XDG_RUNTIME_DIR, XDG_SESSION_ID and HOME used to choose the vault and
    /// the session; now they change nothing: every run sees the broker's one vault, and a
    /// vault planted where XDG_STATE_HOME points is not read.
    @Test func xdgVariablesAndHomeChangeNothing() throws {
        let home = try Home()
        #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: "4321\n").status == 0)
        let elsewhere = try TempDirectory()
        #expect(mkdir(elsewhere.file("fingerseal"), 0o700) == 0)
        writeFile(elsewhere.file("fingerseal/vault"), Array("not a vault".utf8))
        for variables in [["XDG_STATE_HOME": elsewhere.path], ["HOME": elsewhere.path, "XDG_STATE_HOME": ""],
                          ["XDG_RUNTIME_DIR": elsewhere.path, "XDG_SESSION_ID": "c42"]] {
            let status = try home.run(["status", "--json"], environment: variables)
            #expect(status.status == 0, "\(variables): \(status.all)")
            #expect(status.stdout.contains("\"directory\" : \"\(home.vaultDirectory)\""), "\(variables): \(status.stdout)")
            #expect(status.stdout.contains("\"pin_set\" : true"))
            // The PIN of the broker's vault works with any of them, and only that PIN.
            #expect(try home.run(["pin", "change", "--pin-fd", "3"], fd3: "4321\n4321\n", environment: variables).status == 0)
        }
        #expect(try Child.run("/bin/ls", ["-A", elsewhere.path]).stdout == "fingerseal\n")
        #expect(try Child.run("/bin/ls", ["-A", elsewhere.file("fingerseal")]).stdout == "vault\n")
        #expect(readFile(elsewhere.file("fingerseal/vault")) == Array("not a vault".utf8))
        #expect(home.leftInHome().isEmpty, "\(home.leftInHome())")
    }

    @Test func pinChangeNeedsTheOldPIN() throws {
        let home = try Home()
        #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: "4321\n").status == 0)
        let again = try home.run(["pin", "set", "--pin-fd", "3"], fd3: "5555\n")
        #expect(again.status == 2, "a vault exists: \(again.all)")
        let wrong = try home.run(["pin", "change", "--pin-fd", "3"], fd3: "0000\n99999\n")
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("The PIN is not correct."))
        let short = try home.run(["pin", "change", "--pin-fd", "3"], fd3: "4321\n12\n")
        #expect(short.status == 2)
        #expect(try home.run(["pin", "change", "--pin-fd", "3"], fd3: "4321\n99999\n").status == 0)
        #expect(try home.run(["pin", "change", "--pin-fd", "3"], fd3: "99999\n4321\n").status == 0)
        #expect(try home.run(["status"]).stdout.contains("wrong PINs in a row: 0"))
    }

    @Test func resetNeedsConfirmation() throws {
        let home = try Home()
        #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: "4321\n").status == 0)
        // No terminal to confirm on: refuse, delete nothing.
        let refused = try home.run(["reset"])
        #expect(refused.status == 2, "\(refused.all)")
        #expect(refused.stderr.contains("No terminal to read from."), "\(refused.all)")
        #expect(readFile(home.vaultFile) != nil)
        // The PIN is needed too (a sensitive operation); a wrong one deletes nothing.
        #expect(try home.run(["reset", "--yes", "--pin-fd", "3"], fd3: "1111\n").status == 1)
        #expect(readFile(home.vaultFile) != nil)
        let done = try home.run(["reset", "--yes", "--pin-fd", "3"], fd3: "4321\n")
        #expect(done.status == 0, "\(done.all)")
        #expect(readFile(home.vaultFile) == nil)
        #expect(try home.run(["status"]).status == 6)
        #expect(try home.run(["reset", "--yes"]).status == 0)
        #expect(home.leftInHome().isEmpty, "\(home.leftInHome())")
    }

    @Test func damagedVaultGivesAClearMessageAndExitNine() throws {
        let home = try Home()
        #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: "4321\n").status == 0)
        let path = home.vaultFile
        var bytes = try #require(readFile(path))
        bytes[bytes.count / 2] ^= 0x20
        writeFile(path, bytes)
        let status = try home.run(["status"])
        #expect(status.status == 9)
        #expect(status.stderr.contains("The fingerseal file vault cannot be used"), "\(status.stderr)")
        #expect(status.stderr.contains("left unchanged"))
        #expect(readFile(path) == bytes)
        #expect(try home.run(["pin", "change", "--pin-fd", "3"], fd3: "4321\n5678\n").status == 9)
        #expect(readFile(path) == bytes)
    }

    @Test func canaryNeverAppearsInOutputArgumentsOrFiles() throws {
        let home = try Home()
        let pin = "CanaryPIN7531"
        let token = "CANARY-REFRESH-TOKEN-9d1f"
        var outputs: [Child.Result] = []
        outputs.append(try home.run(["pin", "set", "--pin-fd", "3"], fd3: pin + "\n"))
        let put = try Child.run(Paths.torture, ["put", home.vaultDirectory, "refresh-token"], stdin: Array((token + "\n").utf8))
        #expect(put.status == 0, "\(put.all)")
        outputs.append(try home.run(["status"]))
        outputs.append(try home.run(["status", "--json"]))
        outputs.append(try home.run(["pin", "change", "--pin-fd", "3"], fd3: "wrong-" + pin + "\n"))
        outputs.append(try home.run(["pin", "change", "--pin-fd", "3"], fd3: pin + "\n" + pin + "x\n"))
        outputs.append(try home.run(["pin", "change", "--pin-fd", "3"], fd3: pin + "x\n12\n"))
        outputs.append(try home.run(["pin", "set", "--pin-fd", "3"], fd3: pin + "\n"))
        outputs.append(try home.run(["status", "--pin-fd=" + pin]))
        outputs.append(try home.run(["audit"]))
        outputs.append(try home.run(["audit", "--json"]))
        for output in outputs {
            for canary in [pin, token, "wrong-" + pin] {
                #expect(!output.all.contains(canary), "canary in: \(output.all)")
            }
        }
        // Nor the broker's arguments or environment.
        let broker = try #require(home.broker.process)
        for file in ["cmdline", "environ"] {
            let bytes = try #require(readFile("/proc/\(broker.pid)/\(file)"))
            for canary in [pin, token] { #expect(!contains(bytes, canary), "\(canary) in the broker's \(file)") }
        }
        for name in try Child.run("/bin/ls", ["-A", home.vaultDirectory]).stdout.split(separator: "\n") {
            let bytes = readFile(home.vaultDirectory + "/" + name) ?? []
            for canary in [pin, token, pin + "x"] {
                #expect(!contains(bytes, canary), "\(canary) in clear in \(name)")
            }
        }
        #expect(home.leftInHome().isEmpty, "\(home.leftInHome())")
    }

    func contains(_ bytes: [UInt8], _ text: String) -> Bool {
        let needle = Array(text.utf8)
        return bytes.count >= needle.count && (0...(bytes.count - needle.count)).contains {
            Array(bytes[$0..<($0 + needle.count)]) == needle
        }
    }
}
