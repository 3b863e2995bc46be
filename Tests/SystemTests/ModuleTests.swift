import CPAM
import Glibc
import PAMKit
import Testing
@testable import TestSupport

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
                                 "pam_sm_close_session", "pam_sm_chauthtok"], "\(globals)")
    }

    @Test func needsNothingFromTheSwiftToolchain() throws {
        let result = try Child.run("/usr/bin/ldd", [Paths.module])
        #expect(result.status == 0)
        #expect(!result.stdout.contains("swift"), "\(result.stdout)")
        #expect(!result.stdout.contains("/opt/"), "\(result.stdout)")
        #expect(!result.stdout.contains("not found"), "\(result.stdout)")
    }

    /// No NODELETE: it was there because the Swift runtime's threads and exit handlers outlived
    /// dlclose. The Embedded module carries no runtime: no thread-local storage, no constructors
    /// beyond the C runtime's own, no text relocations; a host may unload it like a C module
    /// (pam-cycles sees it go: ModuleClientTests.cyclesLeaveTheHostAsFound).
    @Test func unloadsLikeACModule() throws {
        let dynamic = try Child.run("/usr/bin/readelf", ["-d", "-l", "-S", "-W", Paths.module])
        #expect(dynamic.status == 0, "\(dynamic.stderr)")
        #expect(!dynamic.stdout.contains("NODELETE"), "\(dynamic.stdout)")
        #expect(!dynamic.stdout.contains("TEXTREL"), "\(dynamic.stdout)")
        #expect(!dynamic.stdout.contains(" TLS "), "\(dynamic.stdout)")
        #expect(!dynamic.stdout.contains(".tbss") && !dynamic.stdout.contains(".tdata"), "\(dynamic.stdout)")
        // A few KiB to a few hundred: nothing of the Swift runtime or Foundation in it.
        var info = stat()
        #expect(stat(Paths.module, &info) == 0)
        #expect(info.st_size > 0 && info.st_size <= 1 << 20, "\(info.st_size) bytes")
    }

    /// A thin client of the broker (design §2): no Foundation, libfprint, GLib, libcurl or
    /// libsodium in the PAM host; NEEDED holds libpam and the C/C++ runtime only (design §6).
    @Test func linksNothingButLibpamAndTheCRuntime() throws {
        let dynamic = try Child.run("/usr/bin/readelf", ["-d", Paths.module])
        #expect(dynamic.status == 0, "\(dynamic.stderr)")
        let needed = dynamic.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line -> String? in
            guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
            return String(line[line.index(after: open)..<close])
        }
        #expect(!needed.isEmpty)
        for library in needed {
            for banned in ["Foundation", "fprint", "curl", "glib", "gio", "gobject", "sodium", "dispatch", "icu"] {
                #expect(!library.lowercased().contains(banned.lowercased()), "\(library) is linked")
            }
        }
        // Exactly libpam and libc: an Embedded module needs no libm either (every library a
        // host loads for the module costs it a mapping and its relocations).
        #expect(Set(needed) == ["libpam.so.0", "libc.so.6"], "\(needed)")
        // ldd too: nothing comes in indirectly.
        let ldd = try Child.run("/usr/bin/ldd", [Paths.module]).stdout
        for banned in ["Foundation", "fprint", "curl", "glib", "sodium"] {
            #expect(!ldd.contains(banned), "\(ldd)")
        }
    }

    @Test func dlsymFindsOnlyTheEntryPoints() throws {
        let handle = try #require(dlopen(Paths.module, RTLD_NOW | RTLD_LOCAL))
        defer { dlclose(handle) }
        #expect(dlsym(handle, "pam_sm_authenticate") != nil)
        #expect(dlsym(handle, "pam_sm_setcred") != nil)
        for hidden in ["swift_retain", "$s14FingersealWire7OutcomeO9pamReturnAA9PAMReturnOvg", "main"] {
            #expect(dlsym(handle, hidden) == nil, "\(hidden) is exported")
        }
    }

    @Test func loadsThroughARealPAMStack() throws {
        let services = try serviceDirectory([
            "auth [success=done default=ignore] \(Paths.module) debug socket=/nonexistent/fingerseal/socket",
            "auth requisite pam_deny.so",
        ])
        let client = try PAMClient(service: "fingerseal-test", user: "root", configDirectory: services.path) { _ in nil }
        // No broker to ask: the stack moves on to the next module (pam_deny).
        #expect(client.authenticate() == PAM_AUTH_ERR)
    }

    @Test func moduleAloneReportsUnavailableNotSuccess() throws {
        let services = try serviceDirectory(["auth required \(Paths.module) socket=/nonexistent/fingerseal/socket"])
        let client = try PAMClient(service: "fingerseal-test", user: "root", configDirectory: services.path) { _ in nil }
        #expect(client.authenticate() == PAM_AUTHINFO_UNAVAIL)
        // setcred has nothing to establish; in its own transaction it succeeds.
        let fresh = try PAMClient(service: "fingerseal-test", user: "root", configDirectory: services.path) { _ in nil }
        #expect(fresh.setCredentials() == PAM_SUCCESS)
    }

    /// The module's own options (socket, timeout, debug) are checked by the module.
    @Test(arguments: ["timeout=abc", "timeout=0", "debug=maybe", "socket=relative/path", "socket=/run/../tmp/socket",
                      "socket=/" + String(repeating: "s", count: 120), "timeout=" + String(repeating: "9", count: 100 * 1024)])
    func hostileOptionsGiveServiceError(option: String) throws {
        let services = try serviceDirectory(["auth required \(Paths.module) socket=/nonexistent/fingerseal/socket \(option)"])
        let client = try PAMClient(service: "fingerseal-test", user: "root", configDirectory: services.path) { _ in nil }
        #expect(client.authenticate() == PAM_SERVICE_ERR)
    }

    /// The broker's options are the broker's to judge: without a broker they change nothing.
    @Test(arguments: ["max_fails=100000", "store=relative/path", "no-such-option"])
    func otherOptionsAreTheBrokers(option: String) throws {
        let services = try serviceDirectory(["auth required \(Paths.module) socket=/nonexistent/fingerseal/socket \(option)"])
        let client = try PAMClient(service: "fingerseal-test", user: "root", configDirectory: services.path) { _ in nil }
        #expect(client.authenticate() == PAM_AUTHINFO_UNAVAIL)
    }
}
