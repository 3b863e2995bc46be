import CPAM
import Glibc
import Localization
import PAMKit
import Testing
@testable import FingersealCore
@testable import SystemKit
@testable import TestSupport

/// The message catalogs (po/README): complete, valid, and used: the CLI, the broker and a PAM
/// conversation speak Norwegian when the person's environment asks for it, English otherwise.
@Suite(.serialized) struct LocalizationTests {
    /// The build's catalogs: po/*.po compiled into a directory of this test process's own.
    static let catalogs: String = {
        let directory = "/tmp/fingerseal-locale-\(getpid())"
        for language in ["nb"] {
            let target = directory + "/\(language)/LC_MESSAGES"
            _ = try? Child("/bin/mkdir", ["-p", target]).finish()
            _ = try? Child("/usr/bin/msgfmt", ["-o", target + "/fingerseal.mo", Paths.packageRoot + "/po/\(language).po"]).finish()
        }
        return directory
    }()
    static var locale: [String: String] { ["FINGERSEAL_LOCALEDIR": catalogs] }
    static var norwegianExists: Bool { access(catalogs + "/nb/LC_MESSAGES/fingerseal.mo", R_OK) == 0
        && Localization.languageAvailable("nb_NO.UTF-8") }

    @Test func everyMessageOfTheSourcesIsInThePot() throws {
        let check = try Child("/usr/bin/python3", [Paths.packageRoot + "/scripts/update-po", "--check"]).finish()
        #expect(check.status == 0, "\(check.all)")
    }

    @Test func theNorwegianCatalogPassesMsgfmtCheckFullyTranslated() throws {
        let check = try Child("/usr/bin/msgfmt", ["--check", "--statistics", "-o", "/dev/null", Paths.packageRoot + "/po/nb.po"],
                              environment: ["LC_ALL": "C"]).finish()
        #expect(check.status == 0, "\(check.all)")
        #expect(!check.all.contains("fuzzy") && !check.all.contains("untranslated"), "\(check.all)")
    }

    /// Where a program finds its catalogs: beside its installation, in the build tree it was
    /// built in (issue 33 §9: the agent run from a build tree spoke English), or where
    /// FINGERSEAL_LOCALEDIR says.
    @Test func catalogsAreFoundBesideTheProgram() {
        #expect(Localization.installedDirectory(executable: "/usr/bin/fingerseal") == "/usr/share/locale")
        #expect(Localization.installedDirectory(executable: "/usr/local/libexec/fingerseal/fingerseal-agent") == "/usr/local/share/locale")
        #expect(Localization.installedDirectory(executable: "/src/fs/.build/x86_64-unknown-linux-gnu/debug/fingerseal-agent")
                == "/src/fs/.build/locale")
        #expect(Localization.installedDirectory(executable: "/opt/tool") == "/usr/share/locale")
        #expect(Localization.installedDirectory(executable: "/usr/bin/fingerseal", environment: "/tmp/l") == "/tmp/l")
    }

    @Test func placeholdersCanBeReordered() {
        #expect(Localization.fill("%2$s før %1$s, 100%%", ["a", "b"]) == "b før a, 100%")
        #expect(Localization.fill("%1$s og %1$s", ["x"]) == "x og x")
        // Nothing to fill: left as written.
        #expect(Localization.fill("%3$s", ["x"]) == "%3$s")
    }

    /// Sentences that carry a reason of ours (a damaged file, an unsafe file, a refused option,
    /// a failed system step, a failed audit action) come out in Norwegian whole: the reason is
    /// translated too, never an English clause inside a Norwegian sentence.
    @Test(.enabled(if: LocalizationTests.norwegianExists))
    func reasonsInsideSentencesAreTranslatedToo() throws {
        Localization.bind(directory: Self.catalogs)
        let norwegian = try #require(Localization.language("nb"))
        func badOption(_ argument: String) -> String {
            var options = Options()
            do { try options.apply([argument], source: "test"); return "" } catch { return (error as? FingersealError)?.message ?? "" }
        }
        let rendered = Localization.with(norwegian) {
            [Messages.vaultDamaged("vault", tr("its contents are not valid")),
             Messages.unsafeFile(Messages.unsafeReason(UnsafeFileError(path: "/x", reason: .writableByOthers(mode: 0o666)))),
             Messages.systemFailure(.saveVault),
             Messages.auditFailure(.unlock, Messages.auditReason(.outcome(.wrongPIN))),
             Messages.selftestStep("delete", failure: nil, milliseconds: 1.5),
             badOption("reader=both"), badOption("max_tries=99")]
        }
        #expect(rendered == [
            "Fingerseal-filen vault kan ikke brukes: innholdet er ugyldig. Den ble ikke endret.",
            "Fingerseal nektet å bruke filene sine fordi /x kan skrives av gruppen eller andre (modus 666). Rett eierskapet eller tilgangene, eller fjern filen.",
            "Fingerseal kunne ikke lagre hvelvet.",
            "Opplåsingen lyktes ikke: PIN-koden var feil.",
            "slette: bestått (1.5 ms)",
            "Valget reader er ikke gyldig: bruk auto, fprintd eller libfprint.",
            "Valget max_tries er ikke gyldig: den trenger et heltall fra 1 til 20.",
        ])
        // The same calls on a thread without a language: English.
        #expect(Messages.systemFailure(.saveVault) == "Fingerseal could not save the vault.")
    }

    @Test func theLanguageComesFromTheEnvironmentAsGettextReadsIt() {
        let environment = { (values: [String: String]) in Localization.preference { values[$0] } }
        #expect(environment(["LANGUAGE": "nb"]) == "nb")
        #expect(environment(["LANGUAGE": "nb:en", "LANG": "en_US.UTF-8"]) == "nb:en")
        #expect(environment(["LANGUAGE": "nb", "LC_ALL": "C"]) == "C")
        #expect(environment(["LC_MESSAGES": "nb_NO.UTF-8", "LANG": "en_GB.UTF-8"]) == "nb_NO.UTF-8")
        #expect(environment([:]) == nil)
        #expect(Localization.language("C") == nil)
        #expect(Localization.language("en_US.UTF-8:nb") == nil)
        #expect(Localization.language("../../etc/passwd") == nil)
    }

    /// The time zone travels with the request as the language does (issue 23 §4): the broker
    /// (in UTC) shows the vault's age in Oslo's time, in Norwegian, as glibc would; a zone it
    /// cannot use is named in its log and the time shown in UTC, said as such.
    @Test(.enabled(if: LocalizationTests.norwegianExists))
    func statusInThePersonsZoneAndLanguage() throws {
        let home = try CLIHome(brokerEnvironment: Self.locale)
        #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: "4321\n").status == 0)
        let json = try home.run(["status", "--json"])
        let iso = try #require(json.stdout.split(separator: "\"").drop { $0 != "enabled_since" }.dropFirst(2).first.map(String.init),
                               "\(json.stdout)")
        let epoch = try Child.run("/bin/date", ["-d", iso, "+%s"]).stdout.split(separator: "\n").first.map(String.init) ?? "?"
        func glibc(_ tz: String, _ locale: String, _ format: String) throws -> String {
            let shown = try Child.run("/bin/date", ["-d", "@" + epoch, format], environment: ["TZ": tz, "LC_ALL": locale]).stdout
            return String(shown.split(separator: "\n").first ?? "")
        }

        let norwegian = Self.locale.merging(["LANG": "nb_NO.UTF-8", "TZ": "Europe/Oslo"]) { $1 }
        let oslo = try home.run(["status"], environment: norwegian)
        let expected = try glibc("Europe/Oslo", "nb_NO.UTF-8", "+Aktivert siden %x kl. %H:%M.")
        #expect(oslo.stdout.contains(expected + "\n"), "\(expected) in \(oslo.stdout)")

        // A POSIX rule as TZ, and English.
        let rule = "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0"
        let english = try home.run(["status"], environment: Self.locale.merging(["TZ": rule]) { $1 })
        let expectedEnglish = try glibc(rule, "C", "+Enabled since %Y-%m-%d at %H:%M.")
        #expect(english.stdout.contains(expectedEnglish + "\n"), "\(expectedEnglish) in \(english.stdout)")

        // A zone that is not there: UTC, named as such; never an error.
        let bogus = try home.run(["status"], environment: Self.locale.merging(["TZ": "Nowhere/Atlantis"]) { $1 })
        #expect(bogus.status == 0, "\(bogus.all)")
        let expectedUTC = try glibc("UTC", "C", "+Enabled since %Y-%m-%d at %H:%M UTC.")
        #expect(bogus.stdout.contains(expectedUTC + "\n"), "\(expectedUTC) in \(bogus.stdout)")
    }

    @Test(.enabled(if: LocalizationTests.norwegianExists))
    func statusAndUnlockWithThePINInNorwegian() throws {
        let home = try CLIHome(brokerEnvironment: Self.locale)
        let norwegian = Self.locale.merging(["LANGUAGE": "nb"]) { $1 }
        let set = try home.run(["pin", "set", "--pin-fd", "3"], fd3: "4321\n", environment: norwegian)
        #expect(set.status == 0, "\(set.all)")
        #expect(set.stdout.contains("PIN-koden er satt. Fingerseal er klar."), "\(set.all)")

        let status = try home.run(["status"], environment: norwegian)
        #expect(status.status == 0, "\(status.all)")
        #expect(status.stdout.contains("Aktivert siden "), "\(status.stdout)")
        #expect(status.stdout.contains("Sist verifisert: aldri."), "\(status.stdout)")
        #expect(status.stdout.contains("PIN-kode: satt"), "\(status.stdout)")
        #expect(status.stdout.contains("Pålogging: ikke logget inn"), "\(status.stdout)")

        // unlock without a sign-in says so; the PIN asked through --pin-fd, a wrong one.
        let unlock = try home.run(["unlock", "--pin-fd", "3"], fd3: "4321\n", environment: norwegian)
        #expect(unlock.stderr.contains("Denne kontoen er ikke logget inn hos en identitetsleverandør."), "\(unlock.all)")
        let wrong = try home.run(["pin", "change", "--pin-fd", "3"], fd3: "0000\n5678\n", environment: norwegian)
        #expect(wrong.stderr.contains("PIN-koden er feil."), "\(wrong.all)")
        // The CLI's prefix too.
        #expect(wrong.stderr.hasPrefix("fingerseal: feil: "), "\(wrong.all)")

        // The CLI's own sentences follow LANG the same way.
        let bogus = try home.run(["bogus"], environment: Self.locale.merging(["LANG": "nb_NO.UTF-8"]) { $1 })
        #expect(bogus.stderr.contains("Ukjent kommando bogus."), "\(bogus.all)")

        // English stays the default.
        let english = try home.run(["status"], environment: Self.locale)
        #expect(english.stdout.contains("Enabled since "), "\(english.stdout)")
        #expect(english.stdout.contains("PIN: set"), "\(english.stdout)")
        let wrongEnglish = try home.run(["pin", "change", "--pin-fd", "3"], fd3: "0000\n5678\n", environment: Self.locale)
        #expect(wrongEnglish.stderr.contains("The PIN is not correct."), "\(wrongEnglish.all)")
        #expect(wrongEnglish.stderr.hasPrefix("fingerseal: error: "), "\(wrongEnglish.all)")
    }

    /// --help in Norwegian: summaries, discussions, option help and the fixed words come from
    /// the catalog; command names, options and metavariables (N, PATH, NAME) stay as typed.
    /// English without LANGUAGE, and under LC_ALL=C whatever LANGUAGE says.
    @Test(.enabled(if: LocalizationTests.norwegianExists))
    func helpInNorwegian() throws {
        let norwegian = Self.locale.merging(["LANGUAGE": "nb"]) { $1 }
        let root = try Child.run(Paths.cli, ["--help"], environment: norwegian)
        #expect(root.status == 0, "\(root.all)")
        for line in ["Bruk: fingerseal COMMAND [OPTIONS]", "Kommandoer:",
                     "  status      Vis om fingerseal er satt opp, og hvordan hvelvet ditt er beskyttet.",
                     "Kjør «fingerseal COMMAND --help» for hjelp til en kommando.", "Valg:",
                     "  --version  Vis versjonen.", "  --help     Vis denne hjelpen."] {
            #expect(root.stdout.contains(line), "\(line)\n\(root.stdout)")
        }
        let pinSet = try Child.run(Paths.cli, ["pin", "set", "--help"], environment: norwegian)
        #expect(pinSet.status == 0, "\(pinSet.all)")
        for line in ["Bruk: fingerseal pin set [OPTIONS]", "Sett opp fingerseal med en ny PIN-kode (oppretter hvelvet ditt).",
                     "Med --pin-fd er første linje den nye PIN-koden. Å opprette hvelvet krever kontopassordet ditt.",
                     "  --pin-fd N       Les PIN-koder fra fildeskriptor N, én per linje, i stedet for fra terminalen.",
                     "  --user NAME      Handle for kontoen NAME i stedet for din egen (bare root).",
                     "  --help           Vis denne hjelpen."] {
            #expect(pinSet.stdout.contains(line), "\(line)\n\(pinSet.stdout)")
        }
        #expect(!pinSet.stdout.contains("Usage:") && !pinSet.stdout.contains("Options:"), "\(pinSet.stdout)")

        for environment in [Self.locale, Self.locale.merging(["LANGUAGE": "nb", "LC_ALL": "C"]) { $1 }] {
            let english = try Child.run(Paths.cli, ["pin", "set", "--help"], environment: environment)
            for line in ["Usage: fingerseal pin set [OPTIONS]", "Set up fingerseal with a new PIN (creates your vault).",
                         "Options:", "  --help           Show this help."] {
                #expect(english.stdout.contains(line), "\(environment): \(line)\n\(english.stdout)")
            }
            let rootEnglish = try Child.run(Paths.cli, ["--help"], environment: environment)
            #expect(rootEnglish.stdout.contains("Run \"fingerseal COMMAND --help\" for help on a command."), "\(rootEnglish.stdout)")
        }

        // Every command: no line of its English help but the blank ones is left in its
        // Norwegian help (a sentence the extractor missed, or read differently from Swift,
        // would be).
        var paths: [[String]] = [[]]
        var index = 0
        while index < paths.count, paths.count < 100 {
            let path = paths[index]
            index += 1
            let english = try Child.run(Paths.cli, path + ["--help"], environment: Self.locale)
            let translated = try Child.run(Paths.cli, path + ["--help"], environment: norwegian)
            #expect(english.status == 0 && translated.status == 0, "\(path)")
            let lines = english.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let norwegianLines = Set(translated.stdout.split(separator: "\n").map(String.init))
            for line in lines where !line.isEmpty {
                #expect(!norwegianLines.contains(line), "untranslated in fingerseal \(path.joined(separator: " ")) --help: \(line)")
            }
            if let start = lines.firstIndex(of: "Commands:") {
                for line in lines[(start + 1)...].prefix(while: { !$0.isEmpty }) {
                    if let name = line.split(separator: " ").first { paths.append(path + [String(name)]) }
                }
            }
        }
        #expect(paths.count > 20 && paths.count < 100, "\(paths)")

        // The completion scripts do not depend on the language of the run.
        for (shell, file) in [("bash", CompletionTests.bashScript), ("zsh", CompletionTests.zshScript)] {
            let script = try Child.run(Paths.cli, ["completion", shell], environment: norwegian)
            #expect(script.stdout == String(decoding: readFile(file) ?? [], as: UTF8.self), "\(shell)")
        }
    }

    /// doctor in Norwegian: this side's findings and the service's, each line shape (word,
    /// finding, fix) and the summary; --json keeps its field names and status words English.
    @Test(.enabled(if: LocalizationTests.norwegianExists))
    func doctorInNorwegian() throws {
        let system = try DoctorSystem()
        let home = try CLIHome(brokerEnvironment: Self.locale)
        let norwegian = Self.locale.merging(system.environment) { $1 }.merging(["LANGUAGE": "nb"]) { $1 }
        #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: "4321\n", environment: norwegian).status == 0)

        let doctor = try home.run(["doctor"], environment: norwegian)
        #expect(doctor.status == 8, "\(doctor.all)")
        #expect(doctor.stdout.contains("OK: Fingerseal-tjenesten svarer på \(home.broker.socketPath)."), "\(doctor.stdout)")
        #expect(doctor.stdout.contains("OK: PIN-koden er satt."), "\(doctor.stdout)")
        #expect(doctor.stdout.contains("Problem: Ingen finger er registrert, så bare PIN-koden låser opp. Løsning: Registrer en finger med: fingerseal enroll"),
                "\(doctor.stdout)")
        let summary = doctor.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(summary.hasSuffix("hindrer opplåsing med fingeravtrykk; hver løsning står på sin linje.")
                || summary.hasSuffix("hindrer opplåsing med fingeravtrykk; løsningen står på samme linje."), "\(doctor.stdout)")
        #expect(!doctor.stdout.contains("Fix: ") && !doctor.stdout.contains("Nothing blocks"), "\(doctor.stdout)")

        let json = try home.run(["doctor", "--json"], environment: norwegian)
        #expect(json.stdout.contains("\"check\": \"pin\", \"status\": \"ok\", \"message\": \"PIN-koden er satt.\""), "\(json.stdout)")
        #expect(json.stdout.contains("\"blocks_unlock\": true"), "\(json.stdout)")

        let english = try home.run(["doctor"], environment: Self.locale.merging(system.environment) { $1 })
        #expect(english.stdout.contains("OK: The PIN is set."), "\(english.stdout)")
    }

    /// A PAM conversation: the host's PAM environment says LANG=nb_NO.UTF-8 (as pam_env or a
    /// display manager sets it); the module passes it on, and the broker asks in Norwegian.
    @Test(.enabled(if: LocalizationTests.norwegianExists))
    func aPAMConversationInTheLanguageOfThePAMEnvironment() throws {
        let rig = try ReaderBroker(driver: "none", reader: false, extraEnvironment: Self.locale)
        guard let user = try UserAccount.current() else { throw TestFailure("no account") }
        let services = rig.files.file("pam.d")
        #expect(mkdir(services, 0o755) == 0)
        writeFile(services + "/fingerseal-test",
                  Array("auth required \(Paths.module) socket=\(rig.broker.socketPath) pin\n".utf8), mode: 0o644)
        let store = VaultStore(location: .broker(stateDirectory: rig.broker.state, account: user))
        _ = try Vault.create(store, pin: PINKeyslot(pin: secret("4826"), cost: .fastForTests))

        func authenticate(_ answer: String, language: String?) throws -> (Int32, [PAMClient.Message]) {
            var seen: [PAMClient.Message] = []
            let client = try PAMClient(service: "fingerseal-test", user: user.name, configDirectory: services) { message in
                seen.append(message)
                if case .promptEchoOff = message { return answer }
                return nil
            }
            _ = client.setItem(.tty, "/dev/pts/0")
            if let language { #expect(client.setEnvironment("LANG", language) == PAM_SUCCESS) }
            let rc = client.authenticate()
            return (rc, seen)
        }

        let (wrong, norwegian) = try authenticate("0000", language: "nb_NO.UTF-8")
        #expect(wrong == PAM_AUTH_ERR)
        #expect(norwegian.contains(.promptEchoOff("PIN-kode: ")), "\(norwegian)")
        #expect(norwegian.contains(.errorMessage("PIN-koden er feil.")), "\(norwegian)")
        let (right, _) = try authenticate("4826", language: "nb_NO.UTF-8")
        #expect(right == PAM_SUCCESS)

        // No LANG in the PAM environment: the system's default (English on the build machines).
        let (_, english) = try authenticate("0000", language: nil)
        #expect(english.contains(.promptEchoOff("PIN: ")), "\(english)")
        #expect(english.contains(.errorMessage("The PIN is not correct.")), "\(english)")
    }
}
