import Glibc
import SodiumKit
import Testing
@testable import FingersealCore
@testable import TestSupport

/// The system file and the client secret it names, read as the broker reads them (root).
@Suite(.enabled(if: getuid() == 0)) struct FleetFileTests {
    /// Only one file is read: the new one when it exists, else the old one; a new one that
    /// is refused is an error, not a reason to read the old one.
    @Test func theNewFileWinsTheOldIsReadOnlyWithoutIt() throws {
        let temp = try TempDirectory()
        let new = temp.file("fingerseal.conf"), old = temp.file("security.conf")
        writeFile(old, Array("timeout=20\n".utf8), mode: 0o644)
        #expect(try Options.loadFirst([new, old]).0.timeout == 20, "no new file: the old one")
        writeFile(new, Array("max_fails=9\n".utf8), mode: 0o644)
        let (options, _) = try Options.loadFirst([new, old])
        #expect(options.maxFails == 9 && options.timeout == 15, "the new file alone")
        chmod(new, 0o666)
        #expect(throws: FingersealError.self) { try Options.loadFirst([new, old]) }
        #expect(try Options.loadFirst([temp.file("none-1"), temp.file("none-2")]).0 == Options())
    }

    /// The installed example: as shipped (all commented out) it changes nothing; each of its
    /// commented settings, uncommented, is valid.
    @Test func theExampleFileIsValidLineByLine() throws {
        let text = String(decoding: try #require(readFile(Paths.packageRoot + "/examples/fingerseal.conf")), as: UTF8.self)
        var shipped = Options()
        #expect(try shipped.applyConfigFile(text, source: "example").isEmpty)
        #expect(shipped == Options())
        let settings = text.split(separator: "\n").filter { $0.hasPrefix("#") && !$0.hasPrefix("# ") && $0.contains("=") }
        #expect(settings.count >= 20, "\(settings.count)")
        for line in settings {
            var options = Options()
            #expect(throws: Never.self, "\(line)") { try options.applyConfigFile(String(line.dropFirst()), source: "example") }
        }
        // The per-service example at its end, uncommented: the lock screens get prompt=none,
        // every other service the top level.
        let perService = try #require(text.range(of: "# --- Settings per PAM service"))
        let uncommented = text[perService.upperBound...].split(separator: "\n").filter { $0.hasPrefix("#") && !$0.hasPrefix("# ") }
            .map { $0.dropFirst() }.joined(separator: "\n")
        var sections = Options()
        #expect(try sections.applyConfigFile("pin\n" + uncommented, source: "example").isEmpty)
        for service in ["swaylock", "i3lock", "sddm", "kde"] {
            #expect(try sections.forService(service).prompt == .none && sections.forService(service).pin, "\(service)")
        }
        #expect(try sections.forService("sudo").prompt == .normal && sections.forService("sudo").pin)
    }

    /// The broker's parsed configuration is reused only while the file is the same one,
    /// unchanged: an edit in place, a replacement, or a mode that makes it unsafe applies to
    /// the very next request. Kept at once here (no settle time) to show every change is seen.
    @Test func aKeptConfigurationNeverOutlivesAnEdit() throws {
        let temp = try TempDirectory()
        let path = temp.file("fingerseal.conf")
        let cache = SystemConfigCache(settleTime: 0)
        writeFile(path, Array("timeout=20\n".utf8), mode: 0o644)
        #expect(try Options.loadSystem(path: path, cache: cache).0.timeout == 20)
        #expect(try Options.loadSystem(path: path, cache: cache).0.timeout == 20, "unchanged: the same")
        writeFile(path, Array("timeout=30\nmax_fails=9\n".utf8), mode: 0o644)
        let edited = try Options.loadSystem(path: path, cache: cache).0
        #expect(edited.timeout == 30 && edited.maxFails == 9, "edited in place")
        // An editor's save: a new file renamed over the old one, of the very same size.
        writeFile(temp.file("new.conf"), Array("timeout=40\nmax_fails=8\n".utf8), mode: 0o644)
        #expect(rename(temp.file("new.conf"), path) == 0)
        #expect(try Options.loadSystem(path: path, cache: cache).0.timeout == 40, "replaced")
        chmod(path, 0o666)
        #expect(throws: FingersealError.self, "checked every time") { try Options.loadSystem(path: path, cache: cache) }
        chmod(path, 0o644)
        #expect(try Options.loadSystem(path: path, cache: cache).0.timeout == 40, "safe again")
        chmod(temp.path, 0o777)
        #expect(throws: FingersealError.self, "its directory checked every time") { try Options.loadSystem(path: path, cache: cache) }
        chmod(temp.path, 0o700)
        #expect(unlink(path) == 0)
        #expect(try Options.loadSystem(path: path, cache: cache).0 == Options(), "removed: defaults")
    }

    /// A file changed just now is not kept: a second edit within the file system's timestamp
    /// granularity could leave the same size and times, and must still be read.
    @Test func aFreshlyChangedConfigurationIsReadAgain() throws {
        let temp = try TempDirectory()
        let path = temp.file("fingerseal.conf")
        let cache = SystemConfigCache()
        writeFile(path, Array("timeout=20\n".utf8), mode: 0o644)
        #expect(try Options.loadSystem(path: path, cache: cache).0.timeout == 20)
        writeFile(path, Array("timeout=25\n".utf8), mode: 0o644)
        #expect(try Options.loadSystem(path: path, cache: cache).0.timeout == 25, "same size, maybe the same times")
    }

    func secretFile(_ temp: TempDirectory, _ content: String, mode: mode_t = 0o600) -> String {
        let path = temp.file("client-secret")
        writeFile(path, Array(content.utf8), mode: mode)
        chmod(path, mode)
        return path
    }

    @Test func aRootOnlySecretIsReadWithoutItsNewline() throws {
        let temp = try TempDirectory()
        let secret = try Options.readClientSecret(secretFile(temp, "s3cret-value\n"))
        #expect(secret.withUnsafeBytes { Array($0) } == Array("s3cret-value".utf8))
    }

    @Test func unsafeSecretFilesAreRefused() throws {
        let temp = try TempDirectory()
        func refusal(_ path: String) -> FingersealError? {
            do { _ = try Options.readClientSecret(path); return nil } catch { return error as? FingersealError }
        }
        let readable = refusal(secretFile(temp, "x", mode: 0o644))
        #expect(readable?.outcome == .badConfiguration)
        #expect(readable?.message.contains("can be read by group or others (mode 644)") == true, "\(String(describing: readable))")
        #expect(refusal(secretFile(temp, "x", mode: 0o640))?.outcome == .badConfiguration)
        #expect(refusal(secretFile(temp, "\n"))?.message.contains("is empty") == true)
        #expect(refusal(temp.file("missing"))?.message.contains("does not exist") == true)
        #expect(refusal(secretFile(temp, String(repeating: "s", count: 5000)))?.outcome == .badConfiguration)
        let link = temp.file("link")
        symlink(secretFile(temp, "x"), link)
        #expect(refusal(link)?.message.contains("symbolic link") == true)
        if TestUsers.ensure(TestUsers.alice), let uid = TestUsers.uid(TestUsers.alice) {
            let owned = secretFile(temp, "x")
            chown(owned, uid, 0)
            #expect(refusal(owned)?.message.contains("owned by uid \(uid)") == true)
        }
    }
}

/// `fingerseal login` with the sign-in in the broker's configuration file, against the
/// local IdP; the password flow (alice at the provider) keeps it non-interactive.
@Suite(.enabled(if: LocalIdP.available && getuid() == 0)) struct FleetLoginTests {
    typealias Home = CLIHome

    /// A home whose broker reads `config` (re-read for each request).
    func home(_ config: String) throws -> Home {
        let home = try Home()
        writeFile(home.broker.config, Array(config.utf8), mode: 0o644)
        return home
    }

    func login(_ home: Home, _ arguments: [String] = [], pin: String = "2580") throws -> Child.Result {
        try home.run(["login", "--idp-user", "alice", "--password-fd", "3", "--pin-fd", "3"] + arguments,
                     fd3: "wonderland-7\n\(pin)\n")
    }

    @Test func loginWithoutArgumentsUsesTheFile() throws {
        let idp = try LocalIdP()
        let home = try home("issuer = \(idp.issuer)\nclient_id = fingerseal-test\nflow = password\nscope = openid offline_access\n")
        let result = try login(home)
        #expect(result.status == 0, "\(result.all)")
        #expect(result.stdout.contains("Signed in to \(idp.issuer)."), "\(result.all)")
        let status = try home.run(["status", "--json"])
        #expect(status.stdout.contains("\"issuer\" : \"\(idp.issuer)\""), "\(status.stdout)")
        #expect(status.stdout.contains("\"client_id\" : \"fingerseal-test\""), "\(status.stdout)")
        #expect(try idp.familyAlive("alice"))
    }

    @Test func aFixedValueCannotBeOverridden() throws {
        let idp = try LocalIdP()
        let home = try home("issuer=\(idp.issuer)\nclient_id=fingerseal-test\nflow=password\nfixed=issuer,client_id\n")
        let other = try login(home, ["--client-id", "fingerseal-password"])
        #expect(other.status == 2, "\(other.all)")
        #expect(other.stderr.contains("The administrator fixed client_id for this machine, so --client-id cannot change it."),
                "\(other.all)")
        let elsewhere = try login(home, ["--issuer", "https://idp.example.org"])
        #expect(elsewhere.status == 2 && elsewhere.stderr.contains("fixed issuer"), "\(elsewhere.all)")
        // A caller's secret would change the fixed client's credentials.
        let secret = try TempDirectory()
        writeFile(secret.file("mine"), Array("mine".utf8))
        let withSecret = try login(home, ["--client-secret-file", secret.file("mine")])
        #expect(withSecret.status == 2 && withSecret.stderr.contains("so --client-secret-file cannot change it"), "\(withSecret.all)")
        #expect(try home.run(["status"]).status == 6, "nothing was stored")
        // Repeating the file's value (with or without the trailing slash) changes nothing.
        let same = try login(home, ["--issuer", idp.issuer + "/", "--client-id", "fingerseal-test"])
        #expect(same.status == 0, "\(same.all)")
    }

    /// Beyond login: a fixed `timeout` is not changed by a command's --timeout either.
    @Test func aFixedScanTimeoutCannotBeOverridden() throws {
        let home = try home("timeout=20\nfixed=timeout\n")
        let result = try home.run(["enroll", "--timeout", "5", "--pin-fd", "3"], fd3: "2580\n")
        #expect(result.status == 2, "\(result.all)")
        #expect(result.stderr.contains("The administrator fixed timeout for this machine, so --timeout cannot change it."),
                "\(result.all)")
        let same = try home.run(["enroll", "--timeout", "20", "--pin-fd", "3"], fd3: "2580\n")
        #expect(same.status != 2, "\(same.all)")
    }

    @Test func anUnfixedValueIsOverridden() throws {
        let idp = try LocalIdP()
        // Device flow by default: the --flow override is what makes this sign-in non-interactive.
        let home = try home("issuer=\(idp.issuer)\nclient_id=fingerseal-device\nflow=device\nfixed=issuer\n")
        let result = try login(home, ["--flow", "password", "--client-id", "fingerseal-password"])
        #expect(result.status == 0, "\(result.all)")
        #expect(try home.run(["status", "--json"]).stdout.contains("\"client_id\" : \"fingerseal-password\""))
    }

    @Test func aConfigOwnedByAUserIsRefused() throws {
        let idp = try LocalIdP()
        try #require(TestUsers.ensure(TestUsers.alice))
        let uid = try #require(TestUsers.uid(TestUsers.alice))
        let home = try home("issuer=\(idp.issuer)\nclient_id=fingerseal-test\nflow=password\n")
        chown(home.broker.config, uid, 0)
        let result = try login(home)
        #expect(result.status == 10, "\(result.all)")
        #expect(result.stderr.contains("Fingerseal refused its configuration because \(home.broker.config) is owned by uid \(uid)"),
                "\(result.all)")
        chown(home.broker.config, 0, 0)
        #expect(try home.run(["status"]).status == 6, "nothing was stored")
    }

    @Test func aWorldReadableSecretIsRefused() throws {
        let idp = try LocalIdP()
        let secrets = try TempDirectory()
        let path = secrets.file("client-secret")
        writeFile(path, readFile(idp.temp.file("idp/client-secret")) ?? [], mode: 0o644)
        chmod(path, 0o644)
        let home = try home("issuer=\(idp.issuer)\nclient_id=fingerseal-confidential\nclient_secret_file=\(path)\nflow=password\n")
        let result = try login(home)
        #expect(result.status == 10, "\(result.all)")
        #expect(result.stderr.contains("The client secret file \(path) can be read by group or others (mode 644)."), "\(result.all)")
        #expect(try home.run(["status"]).status == 6, "nothing was stored")
    }

    /// The confidential client through the administrator's secret file: the broker reads it,
    /// and it wins over a caller's --client-secret-file (a wrong one here, never sent). A
    /// sign-in at another client never gets it.
    @Test func theConfidentialClientSignsInWithTheAdministratorsSecret() throws {
        let idp = try LocalIdP()
        let secrets = try TempDirectory()
        let path = secrets.file("client-secret")
        writeFile(path, (readFile(idp.temp.file("idp/client-secret")) ?? []) + Array("\n".utf8), mode: 0o600)
        writeFile(secrets.file("wrong"), Array("not-the-secret".utf8))
        let home = try home("issuer=\(idp.issuer)\nclient_id=fingerseal-confidential\nclient_secret_file=\(path)\nflow=password\n")
        let result = try login(home, ["--client-secret-file", secrets.file("wrong")])
        #expect(result.status == 0, "\(result.all)")
        #expect(result.stderr.contains("The client secret set by the administrator is used"), "\(result.all)")
        #expect(!result.all.contains(String(decoding: readFile(path) ?? [], as: UTF8.self).dropLast()))
        // It still refreshes (the secret is sealed with the sign-in for that).
        let token = try home.run(["unlock", "--pin", "--pin-fd", "3", "--json"], fd3: "2580\n")
        #expect(token.status == 0, "\(token.all)")
    }

    /// Without the file's issuer and client, the administrator's secret is not used: a caller's
    /// own secret is (asked through the CLI).
    @Test func aCallersSecretWorksForItsOwnClient() throws {
        let idp = try LocalIdP()
        let secrets = try TempDirectory()
        writeFile(secrets.file("admin"), Array("admin-secret-never-sent".utf8))
        writeFile(secrets.file("mine"), readFile(idp.temp.file("idp/client-secret")) ?? [])
        let home = try home("issuer=\(idp.issuer)\nclient_id=fingerseal-test\nclient_secret_file=\(secrets.file("admin"))\nflow=password\n")
        let result = try login(home, ["--client-id", "fingerseal-confidential", "--client-secret-file", secrets.file("mine")])
        #expect(result.status == 0, "\(result.all)")
        #expect(!result.stderr.contains("set by the administrator"), "\(result.all)")
    }
}
