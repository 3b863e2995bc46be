// swift-tools-version:6.0
// fingerseal: a PAM module and CLI that unlock a sealed IdP refresh token with a fingerprint.
// Layers, lowest first; each may import the layers named after it (and Glibc), and
// Tests/CoreTests/LayerMapTests.swift checks every import against this map:
//   C*           system libraries: a module map and typed shims          —
//   wrappers     one per C library (SystemKit, SodiumKit, PAMKit, …),    C*, wrappers
//                and the small kits beside them (Localization, ZoneInfo,
//                ReaderValues)
//   wire         FingersealWire, SharedMessages: the messages between    wire, SystemKit and its
//                our programs and what every client shares               C module, Localization
//   core         FingersealCore, FingerprintFlows, IdentityClient        core, wire, wrappers,
//                                                                        FoundationEssentials
//   broker       Broker, fingersealed                                    everything above
//   clients      the PAM module, fingerseal, fingerseal-agent            wire, wrappers, CLinux
// Files that reach further are listed in the test, each with why. No target hands another
// on (`@_exported`) but JOSEKit its refusals: each file imports what it uses.
import PackageDescription


// The PAM module is not built here: scripts/build-module builds it in Embedded Swift (a few
// KiB that need only libc and libpam, no Swift runtime in the host), from the same sources the
// targets below build in full Swift (FingersealWire, PAMKit, SystemKit) and Sources/PAMFingerseal.

// What the CLI links is kept to the Swift standard library: without these, every Swift target
// imports _StringProcessing (regex) and _Concurrency implicitly (about 9,000 symbols of start-up).
let leanSwift: [SwiftSetting] = [.unsafeFlags(["-Xfrontend", "-disable-implicit-string-processing-module-import",
                                               "-Xfrontend", "-disable-implicit-concurrency-module-import"])]

func cLibrary(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let package = Package(
    name: "fingerseal",
    products: [
        .executable(name: "fingerseal", targets: ["fingerseal"]),
        .executable(name: "fingersealed", targets: ["fingersealed"]),
        .executable(name: "fingerseal-agent", targets: ["fingerseal-agent"]),
        // For the fuzzing package in Fuzz/, which builds the core with -sanitize=fuzzer.
        .library(name: "FingersealCore", targets: ["FingersealCore"]),
        .library(name: "IdentityClient", targets: ["IdentityClient"]),
        .library(name: "JOSEKit", targets: ["JOSEKit"]),
        .library(name: "ZoneInfo", targets: ["ZoneInfo"]),
        // The module's and the broker's fuzz targets: the wire protocol, and the broker in process.
        .library(name: "FingersealWire", targets: ["FingersealWire"]),
        .library(name: "Broker", targets: ["Broker"]),
        .library(name: "SystemKit", targets: ["SystemKit"]),
        .library(name: "PAMKit", targets: ["PAMKit"]),
    ],
    targets: [
        // C libraries from Debian.
        cLibrary("CPAM", pkgConfig: "pam", apt: ["libpam0g-dev"]),
        // glib-2.0 for include paths: libfprint-2's and gio's pkg-config add -pthread, which
        // SwiftPM refuses with a warning; the libraries themselves are linked by the module map.
        cLibrary("CFprint", pkgConfig: "glib-2.0", apt: ["libfprint-2-dev", "libglib2.0-dev"]),
        cLibrary("CSodium", pkgConfig: "libsodium", apt: ["libsodium-dev"]),
        // GIO's D-Bus and GLib's main loop, for the session agent (include paths only; the
        // module map links the libraries, as CFprint's does).
        cLibrary("CGio", pkgConfig: "glib-2.0", apt: ["libglib2.0-dev"]),
        // No pkg-config: its -lcurl would link libcurl, which CCurl loads only when used.
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        cLibrary("CTSS2", pkgConfig: "tss2-esys", apt: ["libtss2-dev"]),
        cLibrary("CQRencode", pkgConfig: "libqrencode", apt: ["libqrencode-dev"]),
        // No pkg-config: its -lmicrohttpd would link the library, which CMicroHTTPD loads only when used.
        .systemLibrary(name: "CMicroHTTPD", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CLinux"),
        cLibrary("CSystemd", pkgConfig: "libsystemd", apt: ["libsystemd-dev"]),
        cLibrary("CCrypto", pkgConfig: "libcrypto", apt: ["libssl-dev"]),
        // GTK 4 (and through it GLib, Pango, X11 and Wayland's GDK) for the agent's prompt dialog.
        // SwiftPM drops the -pthread and -msse flags in gtk4's pkg-config with a warning: the
        // include paths are what the module needs, the module map links the libraries.
        cLibrary("CGtk", pkgConfig: "gtk4", apt: ["libgtk-4-dev"]),

        // Thin wrappers: each owns its C pointers; no C types in their public API.
        .target(name: "SystemKit", dependencies: ["CLinux"], swiftSettings: leanSwift),
        .target(name: "SodiumKit", dependencies: ["CSodium"]),
        .target(name: "PAMKit", dependencies: ["CPAM", "SystemKit"], swiftSettings: leanSwift),
        // What a fingerprint reader says and ends with (fingers, events, errors, results): the
        // standard library only, so that fprintd's client needs no libfprint.
        .target(name: "ReaderValues", swiftSettings: leanSwift),
        .target(name: "FprintKit", dependencies: ["CFprint", "CLinux", "ReaderValues", "SystemKit"]),
        // libsystemd: the system bus (sd-bus, and logind's lid state on it), login sessions
        // (sd-login) and the service manager (sd-daemon). Typed errors; no C types outside.
        .target(name: "SystemdKit", dependencies: ["CSystemd", "SystemKit"]),
        // The session bus as GIO speaks it, and GLib's main loop: the session agent's service.
        .target(name: "SessionBusKit", dependencies: ["CGio"]),
        // fprintd over D-Bus (SystemdKit's bus) and the lid's state: no libfprint.
        .target(name: "FprintdKit", dependencies: ["SystemdKit", "ReaderValues", "SystemKit", "CLinux"]),
        // SodiumKit: the bodies and headers that carry secrets are built and received in its
        // secure memory.
        .target(name: "CurlKit", dependencies: ["CCurl", "SodiumKit"]),
        .target(name: "TPMKit", dependencies: ["CTSS2", "SystemKit"]),
        .target(name: "QRKit", dependencies: ["CQRencode"]),
        // OIDC ID tokens and key sets (JWS, JWK) over OpenSSL's libcrypto: signatures only. Its
        // refusals (JOSEError) are a target of their own, stdlib only, which the core carries
        // inside TokenFailure without linking libcrypto; JOSEKit re-exports them.
        .target(name: "JOSEErrors", swiftSettings: leanSwift),
        .target(name: "JOSEKit", dependencies: ["CCrypto", "JOSEErrors", "SodiumKit"]),
        // The browser sign-in's loopback redirect receiver (one request, then it stops).
        .target(name: "LoopbackKit", dependencies: ["CMicroHTTPD", "CLinux", "SodiumKit", "SystemKit"]),

        // The agent's prompt dialog (issue 21 §2): GTK only, every sentence from the caller.
        .target(name: "PromptDialog", dependencies: ["CGtk"]),

        // The broker's wire protocol and the outcome table: the standard library, Glibc and the
        // syscall layer only, so the PAM module that links it stays small (no Foundation).
        .target(name: "FingersealWire", dependencies: ["CLinux", "SystemKit"], swiftSettings: leanSwift),

        // Sentences in the person's language: glibc's gettext over a per-thread locale
        // (stdlib and Glibc only: the CLI links it and stays lean).
        .target(name: "Localization", dependencies: ["CLinux", "SystemKit", "ZoneInfo"], swiftSettings: leanSwift),

        // Time zones without ICU (issue 23 §4): the system's TZif files and POSIX TZ rules, so
        // that the broker shows each person's times in their own zone.
        .target(name: "ZoneInfo", dependencies: ["SystemKit"], swiftSettings: leanSwift),

        // The sentences both ends say, one wording for both: the wire's option errors
        // (`OptionError.message`) and the few the CLI and the broker's table share
        // (`SharedMessages`). The CLI, the core and the broker link it (lean, like the CLI).
        .target(name: "SharedMessages", dependencies: ["FingersealWire", "Localization"], swiftSettings: leanSwift),

        // Pure-Swift core: vault, keyslots, config, lockout, the audit trail (and its events in the
        // journal, through SystemdKit).
        .target(name: "FingersealCore", dependencies: ["FingersealWire", "JOSEErrors", "Localization", "SharedMessages", "SystemKit", "SystemdKit", "SodiumKit",
                                                       "TPMKit"]),

        // Fingerprint flows (verify, enroll, forget) over the core and the reader layer; its
        // own target so that what does not scan never loads libfprint (~5 ms of start-up).
        .target(name: "FingerprintFlows", dependencies: ["FingersealCore", "FprintKit", "FprintdKit", "ReaderValues", "SodiumKit", "SystemKit"]),

        // The identity provider over HTTP (discovery, token requests): its own target, so
        // that what does not talk to the IdP never loads libcurl. Typed errors (TokenFailure's
        // reasons), no sentences: the core's table words them.
        .target(name: "IdentityClient", dependencies: ["FingersealCore", "FingersealWire", "CurlKit", "JOSEKit", "SodiumKit", "SystemKit", "TPMKit"]),

        // The broker: the socket server, the caller's identity, the authorization table, and
        // every flow (design §2, §5).
        .target(name: "Broker", dependencies: ["FingersealCore", "Localization", "ZoneInfo", "SharedMessages", "FingerprintFlows", "IdentityClient", "JOSEKit", "FprintKit", "FprintdKit", "ReaderValues", "CurlKit",
                                               "QRKit", "LoopbackKit", "PAMKit", "SodiumKit", "SystemKit", "SystemdKit", "TPMKit"]),
        .executableTarget(name: "fingersealed", dependencies: ["Broker", "FingersealWire", "SystemKit", "SystemdKit"]),
        // The session agent for applications: a thin client of the broker on the session bus.
        .executableTarget(name: "fingerseal-agent", dependencies: ["FingersealWire", "Localization", "PromptDialog", "SessionBusKit", "SharedMessages",
                                                                   "SodiumKit", "SystemKit", "CLinux"]),

        // The CLI: a thin client of the broker (design §2). The wire protocol, secure memory for
        // typed secrets and the syscall layer, nothing more: no Foundation, no libfprint, libcurl
        // or core, so that `fingerseal --version` starts in milliseconds.
        .executableTarget(name: "fingerseal", dependencies: ["FingersealWire", "Localization", "SharedMessages", "SodiumKit", "SystemKit",
                                                            "CLinux"]),

        // Test helper: a process the crash and concurrency tests can SIGKILL and race.
        .executableTarget(
            name: "vault-torture",
            dependencies: ["FingersealCore", "IdentityClient", "SodiumKit"],
            path: "Tests/Helpers/vault-torture"
        ),

        // Test helper: a wire-protocol client that can run as another user (authorization rows,
        // hostile clients).
        .executableTarget(name: "wire-client", dependencies: ["FingersealWire", "SystemKit"], path: "Tests/Helpers/wire-client"),

        // Test helper: every token request with canary secrets, then a search of its own memory
        // for ordinary copies of them (issue 19 item 13), over a heap that never reuses a block
        // (canary-heap: free keeps it), so every copy ever made is still there. -rdynamic: the
        // replacement free and realloc must be in the executable's dynamic symbols, where
        // libcurl, libc and the Swift runtime find them.
        .target(name: "CanaryHeap", path: "Tests/Helpers/canary-heap"),
        .executableTarget(name: "secret-canary", dependencies: ["CanaryHeap", "CurlKit", "FingersealCore", "IdentityClient", "SodiumKit"],
                          path: "Tests/Helpers/secret-canary", linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic"])]),

        // Test helper: many PAM transactions in one (Swift) process, counting what is left behind.
        .executableTarget(name: "pam-cycles", dependencies: ["PAMKit"], path: "Tests/Helpers/pam-cycles"),

        // Test helper: the soak's PAM host, many scripted transactions in one process (SoakTests).
        .executableTarget(name: "pam-soak", dependencies: ["PAMKit", "BenchSupport"], path: "Tests/Helpers/pam-soak"),

        // Test helper: PromptDialog's dialog, texts from arguments, states from stdin, what the
        // person did on stdout (DesktopTests; and for a person to look at).
        .executableTarget(name: "dialog-demo", dependencies: ["PromptDialog", "CGtk"], path: "Tests/Helpers/dialog-demo"),

        // Benchmarks (`make bench`): prints figures, asserts nothing.
        .executableTarget(
            name: "fingerseal-bench",
            dependencies: ["Broker", "FingersealCore", "IdentityClient", "JOSEKit", "SodiumKit", "SystemKit", "TPMKit"],
            path: "Benchmarks/fingerseal-bench"
        ),

        // What the benchmarks share (virtual-sensor sockets).
        .target(name: "BenchSupport", path: "Benchmarks/BenchSupport"),
        .executableTarget(
            name: "verify-latency",
            dependencies: ["BenchSupport", "FprintKit"],
            path: "Benchmarks/verify-latency"
        ),

        // The tests, by layer (swift-argument-parser's Unit / EndToEnd split); what they share
        // (the local IdP, test users, brokers, PAM and bus rigs) is in TestSupport. The
        // executables a layer runs are its dependencies, so that they are built first.
        // TestSupport is an ordinary target, built by `swift build -c release` as well: it uses
        // the public API of what it imports, never `@testable import` (refused in release).
        .target(
            name: "TestSupport",
            dependencies: ["FingersealCore", "FingersealWire", "IdentityClient", "CurlKit", "SodiumKit", "SystemKit"],
            path: "Tests/TestSupport",
            exclude: ["desktop_probe.py", "pty_session.py", "on_terminal.py", "greetd_greeter.py", "orca_record.py", "system-bus.conf"]
        ),
        // The wire: typed command options and their sentences.
        .testTarget(
            name: "WireTests",
            dependencies: ["TestSupport", "FingersealWire", "SharedMessages", "SystemKit", "ZoneInfo", "fingerseal", "fingersealed"]
        ),
        // The core and the wrappers in this process: vault, tokens, JOSE, libcurl, libfprint,
        // the TPM (the TPM suites share one serialized parent, InProcessTPM, so its broker and
        // lockout suites are here too). Not secret-canary: a test target links the executables
        // it depends on, and with it CanaryHeap's free and realloc, which would replace the test
        // process's own (nothing freed, ASan blind); `swift build --build-tests` builds it anyway.
        .testTarget(
            name: "CoreTests",
            dependencies: ["TestSupport", "FingersealCore", "FingerprintFlows", "IdentityClient", "Broker", "SystemKit", "SodiumKit",
                           "CPAM", "FprintKit", "ReaderValues", "CurlKit", "JOSEKit", "TPMKit", "CTSS2", "QRKit", "fingerseal", "fingersealed"]
        ),
        // The flows against a real broker in the foreground: CLI, login, token, step-up, reader, audit.
        .testTarget(
            name: "FlowTests",
            dependencies: ["TestSupport", "FingersealCore", "FingersealWire", "IdentityClient", "Localization", "SystemKit",
                           "SodiumKit", "PAMKit", "CPAM", "CurlKit", "LoopbackKit", "fingerseal", "fingersealed", "vault-torture",
                           "wire-client"]
        ),
        // The system: the PAM module in real stacks (pamtester, hosts), the trust boundary,
        // fairness, crashes, fprintd, udev, completions, doctor, the catalogs.
        .testTarget(
            name: "SystemTests",
            dependencies: ["TestSupport", "FingersealCore", "FingersealWire", "IdentityClient", "Broker", "Localization", "SystemKit",
                           "SystemdKit", "PAMKit", "CPAM", "FprintKit", "FprintdKit", "ReaderValues", "SessionBusKit", "fingerseal", "fingersealed",
                           "fingerseal-agent", "vault-torture", "pam-cycles", "pam-soak", "wire-client"]
        ),
        // The desktop: PromptDialog's dialog (dialog-demo) on a private X server and AT-SPI
        // bus, as a screen reader and a keyboard user meet it (DesktopSession).
        .testTarget(name: "DesktopTests", dependencies: ["TestSupport", "dialog-demo", "fingerseal", "fingersealed", "fingerseal-agent"]),
    ]
)
