import Glibc
import Testing

/// The built `fingerseal` binary, run as a user would, output compared.
@Suite struct CLITests {
    struct Home {
        let temp: TempDirectory
        var environment: [String: String]

        init() throws {
            temp = try TempDirectory()
            environment = ["XDG_STATE_HOME": temp.path, "PATH": "/usr/bin:/bin", "NO_COLOR": "1"]
        }

        var vaultDirectory: String { temp.path + "/fingerseal" }

        func run(_ arguments: [String], fd3: String? = nil) throws -> Child.Result {
            try Child.run(Paths.cli, arguments, environment: environment, fd3: fd3.map { Array($0.utf8) })
        }
    }

    @Test func versionAndHelpOnEveryCommand() throws {
        let home = try Home()
        let version = try home.run(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.hasPrefix("fingerseal "))
        for command in [[], ["status"], ["pin"], ["pin", "set"], ["pin", "change"], ["reset"]] {
            let help = try home.run(command + ["--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains("Usage: fingerseal"), "\(command)")
            #expect(help.stdout.contains("--help"))
        }
    }

    @Test func usageErrorsExitTwo() throws {
        let home = try Home()
        for arguments in [["bogus"], ["status", "--bogus"], ["pin", "set", "--pin-fd"], ["pin", "set", "--pin-fd", "x"],
                          ["status", "extra"], ["pin", "set", "--pin-fd", "250"]] {
            let result = try home.run(arguments)
            #expect(result.status == 2, "\(arguments): \(result.all)")
            #expect(result.stderr.contains("fingerseal: error:"))
        }
    }

    @Test func statusBeforeAndAfterSetup() throws {
        let home = try Home()
        let none = try home.run(["status", "--json"])
        #expect(none.status == 6)
        #expect(none.stdout.contains("\"vault\" : false"))
        #expect(none.stderr.contains("fingerseal pin set"))

        let set = try home.run(["pin", "set", "--pin-fd", "3"], fd3: "4321\n")
        #expect(set.status == 0, "\(set.all)")
        let status = try home.run(["status"])
        #expect(status.status == 0)
        #expect(status.stdout.contains("device key protected by file permissions only"))
        #expect(status.stdout.contains("PIN: set"))
        #expect(status.stdout.contains("Enabled since: "))
        #expect(status.stdout.contains("Fingers enrolled: none"))
        #expect(status.stdout.contains("Sign-in: not signed in"))
        let json = try home.run(["status", "--json"])
        #expect(json.stdout.contains("\"pin_set\" : true"))
        #expect(json.stdout.contains("\"protection\" : \"file-permissions\""))
        #expect(!json.stdout.contains("\u{1b}["))
    }

    @Test func pinChangeNeedsTheOldPIN() throws {
        let home = try Home()
        #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: "4321\n").status == 0)
        #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: "5555\n").status == 2)
        let wrong = try home.run(["pin", "change", "--pin-fd", "3"], fd3: "0000\n99999\n")
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("The PIN is not correct."))
        let short = try home.run(["pin", "change", "--pin-fd", "3"], fd3: "4321\n12\n")
        #expect(short.status == 2)
        #expect(try home.run(["pin", "change", "--pin-fd", "3"], fd3: "4321\n99999\n").status == 0)
        #expect(try home.run(["pin", "change", "--pin-fd", "3"], fd3: "99999\n4321\n").status == 0)
    }

    @Test func resetNeedsConfirmation() throws {
        let home = try Home()
        #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: "4321\n").status == 0)
        // No terminal to confirm on: refuse, delete nothing.
        let refused = try home.run(["reset"])
        #expect(refused.status == 2, "\(refused.all)")
        #expect(readFile(home.vaultDirectory + "/vault") != nil)
        // The PIN is needed too (a sensitive operation); a wrong one deletes nothing.
        #expect(try home.run(["reset", "--yes", "--pin-fd", "3"], fd3: "1111\n").status == 1)
        #expect(readFile(home.vaultDirectory + "/vault") != nil)
        let done = try home.run(["reset", "--yes", "--pin-fd", "3"], fd3: "4321\n")
        #expect(done.status == 0, "\(done.all)")
        #expect(readFile(home.vaultDirectory + "/vault") == nil)
        #expect(try home.run(["status"]).status == 6)
        #expect(try home.run(["reset", "--yes"]).status == 0)
    }

    @Test func damagedVaultGivesAClearMessageAndExitNine() throws {
        let home = try Home()
        #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: "4321\n").status == 0)
        let path = home.vaultDirectory + "/vault"
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

    @Test func canaryNeverAppearsInOutputOrFiles() throws {
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
        for output in outputs {
            for canary in [pin, token, "wrong-" + pin] {
                #expect(!output.all.contains(canary), "canary in: \(output.all)")
            }
        }
        for name in try Child.run("/bin/ls", ["-A", home.vaultDirectory]).stdout.split(separator: "\n") {
            let bytes = readFile(home.vaultDirectory + "/" + name) ?? []
            for canary in [pin, token, pin + "x"] {
                let needle = Array(canary.utf8)
                let found = bytes.count >= needle.count && (0...(bytes.count - needle.count)).contains {
                    Array(bytes[$0..<($0 + needle.count)]) == needle
                }
                #expect(!found, "\(canary) in clear in \(name)")
            }
        }
    }
}
