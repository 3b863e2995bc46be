import CPAM
import Glibc
import PAMKit
import Testing

/// The built pam_fingerseal.so: its exports, its dependencies, and a real PAM stack.
@Suite struct ModuleTests {
    func serviceDirectory(_ lines: [String]) throws -> TempDirectory {
        let temp = try TempDirectory()
        writeFile(temp.file("fingerseal-test"), Array((lines.joined(separator: "\n") + "\n").utf8), mode: 0o644)
        return temp
    }

    @Test func exportsExactlyThePAMEntryPoints() throws {
        let result = try Child.run("/usr/bin/nm", ["-D", "--defined-only", Paths.module])
        #expect(result.status == 0, "\(result.stderr)")
        // Global symbols have an upper-case type letter.
        let globals = result.stdout.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: " ")
            guard fields.count == 3, fields[1].first?.isUppercase == true else { return nil }
            return String(fields[2])
        }
        #expect(Set(globals) == ["pam_sm_authenticate", "pam_sm_setcred", "pam_sm_acct_mgmt", "pam_sm_open_session",
                                 "pam_sm_close_session"], "\(globals)")
    }

    @Test func needsNothingFromTheSwiftToolchain() throws {
        let result = try Child.run("/usr/bin/ldd", [Paths.module])
        #expect(result.status == 0)
        #expect(!result.stdout.contains("swift"), "\(result.stdout)")
        #expect(!result.stdout.contains("/opt/"), "\(result.stdout)")
        #expect(!result.stdout.contains("not found"), "\(result.stdout)")
        let dynamic = try Child.run("/usr/bin/readelf", ["-d", Paths.module]).stdout
        #expect(dynamic.contains("NODELETE"))
    }

    @Test func dlsymFindsOnlyTheEntryPoints() throws {
        let handle = try #require(dlopen(Paths.module, RTLD_NOW | RTLD_LOCAL))
        defer { dlclose(handle) }
        #expect(dlsym(handle, "pam_sm_authenticate") != nil)
        #expect(dlsym(handle, "pam_sm_setcred") != nil)
        for hidden in ["swift_retain", "sodium_init", "$s14FingersealCore7OutcomeO8pamReturnAA9PAMReturnOvg", "main"] {
            #expect(dlsym(handle, hidden) == nil || hidden == "sodium_init", "\(hidden) is exported")
        }
    }

    @Test func loadsThroughARealPAMStack() throws {
        let services = try serviceDirectory([
            "auth [success=done default=ignore] \(Paths.module) debug",
            "auth requisite pam_deny.so",
        ])
        let client = try PAMClient(service: "fingerseal-test", user: "root", configDirectory: services.path) { _ in nil }
        // Nothing to authenticate with yet: the stack moves on to the next module (pam_deny).
        #expect(client.authenticate() == PAM_AUTH_ERR)
    }

    @Test func moduleAloneReportsUnavailableNotSuccess() throws {
        let services = try serviceDirectory(["auth required \(Paths.module)"])
        let client = try PAMClient(service: "fingerseal-test", user: "root", configDirectory: services.path) { _ in nil }
        #expect(client.authenticate() == PAM_AUTHINFO_UNAVAIL)
        // setcred has nothing to establish; in its own transaction it succeeds.
        let fresh = try PAMClient(service: "fingerseal-test", user: "root", configDirectory: services.path) { _ in nil }
        #expect(fresh.setCredentials() == PAM_SUCCESS)
    }

    @Test(arguments: ["timeout=abc", "timeout=0", "max_fails=100000", "store=relative/path", "debug=maybe",
                      "timeout=" + String(repeating: "9", count: 100 * 1024)])
    func hostileOptionsGiveServiceError(option: String) throws {
        let services = try serviceDirectory(["auth required \(Paths.module) \(option)"])
        let client = try PAMClient(service: "fingerseal-test", user: "root", configDirectory: services.path) { _ in nil }
        #expect(client.authenticate() == PAM_SERVICE_ERR)
    }
}
