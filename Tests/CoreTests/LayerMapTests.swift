import Glibc
import Testing
@testable import TestSupport

/// The layer map (Package.swift's header) as data: each target's layer, what a layer may
/// import, and the few files that reach further, each with why. Every `import` under Sources/
/// is checked against it, so an import across the layers fails here rather than in review,
/// and a new target must be placed in the map.
@Suite struct LayerMapTests {
    enum Layer: CaseIterable {
        /// `C*` system libraries: a module map and typed shims.
        case c
        /// One Swift wrapper per C library (and the small pure-Swift kits beside them): own
        /// every C pointer, typed errors.
        case wrapper
        /// The messages between our programs, their encoding and limits; what every client
        /// shares (step-up rules, the broker's socket).
        case wire
        /// Vault, keyslots, lockout, grants, audit, tokens, settings, the flows.
        case core
        /// The root daemon.
        case broker
        /// The thin clients: the PAM module, the CLI, the session agent.
        case client
    }

    static let layers: [String: Layer] = [
        "SystemKit": .wrapper, "SodiumKit": .wrapper, "CurlKit": .wrapper, "PAMKit": .wrapper, "FprintKit": .wrapper,
        "FprintdKit": .wrapper, "SystemdKit": .wrapper, "TPMKit": .wrapper, "QRKit": .wrapper, "LoopbackKit": .wrapper,
        "SessionBusKit": .wrapper, "PromptDialog": .wrapper, "JOSEKit": .wrapper, "JOSEErrors": .wrapper,
        "Localization": .wrapper, "ZoneInfo": .wrapper, "ReaderValues": .wrapper,
        "FingersealWire": .wire, "SharedMessages": .wire,
        "FingersealCore": .core, "FingerprintFlows": .core, "IdentityClient": .core,
        "Broker": .broker, "fingersealed": .broker,
        "fingerseal": .client, "fingerseal-agent": .client, "PAMFingerseal": .client,
    ]

    /// The layers a layer may import, besides the standard library and Glibc.
    static let mayImport: [Layer: Set<Layer>] = [
        .c: [],
        .wrapper: [.c, .wrapper],
        // The wire's sockets go through the syscall layer.
        .wire: [.wire],
        .core: [.core, .wire, .wrapper],
        .broker: [.core, .wire, .wrapper, .broker],
        .client: [.wire, .wrapper],
    ]

    /// Single modules a layer may import besides its layers'.
    static let alsoMay: [Layer: Set<String>] = [
        // SystemKit's own C module, for the wire's socket calls; the clients' shared sentences
        // in the person's language.
        .wire: ["SystemKit", "CLinux", "Localization"],
        // JSON coding of the vault, the audit lines and the IdP's answers.
        .core: ["FoundationEssentials"],
        .broker: ["FoundationEssentials"],
        // A terminal's and a socket's calls (termios, SO_PEERCRED) the wrappers do not have.
        .client: ["CLinux"],
    ]

    /// Targets that import one module more than their layer.
    static let targetAlsoMay: [String: Set<String>] = [
        // JSON Web Keys and tokens are JSON.
        "JOSEKit": ["FoundationEssentials"],
    ]

    /// Files that reach further than their layer, each with why: debt the map shows.
    static let exceptions: [String: Set<String>] = [
        // GetStatus decodes the broker's status report, JSON between our own programs.
        "fingerseal-agent/Agent.swift": ["FoundationEssentials"],
        "fingerseal-agent/AgentOptions.swift": ["FoundationEssentials"],
    ]

    static func layer(of module: String) -> Layer? {
        if let layer = layers[module] { return layer }
        return module.count > 1 && module.hasPrefix("C") && module.dropFirst().first?.isUppercase == true ? .c : nil
    }

    /// Each Swift file under Sources/TARGET, as TARGET/PATH, with the modules it imports.
    static func imports() throws -> [(target: String, file: String, modules: [String])] {
        let found = try Child.run("/usr/bin/find", [Paths.packageRoot + "/Sources", "-name", "*.swift"])
        return found.stdout.split(separator: "\n").sorted().compactMap { path in
            let relative = String(path.dropFirst(Paths.packageRoot.count + "/Sources/".count))
            guard let target = relative.split(separator: "/").first.map(String.init),
                  let bytes = readFile(String(path)) else { return nil }
            let modules = String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line -> String? in
                let words = line.split(separator: " ")
                guard let at = words.firstIndex(of: "import"), at < words.count - 1,
                      words[..<at].allSatisfy({ $0.hasPrefix("@") }) else { return nil }
                return String(words[at + 1])
            }
            return (target, relative, modules)
        }
    }

    @Test func everyImportIsOneTheMapAllows() throws {
        let files = try Self.imports()
        #expect(files.count > 200, "the sources were read: \(files.count) files")
        var problems: [String] = []
        for (target, file, modules) in files {
            guard let layer = Self.layer(of: target) else {
                problems.append("\(target) is not in the layer map")
                continue
            }
            for module in modules where !["Glibc", "Testing"].contains(module) {
                let allowed = Self.layer(of: module).map { Self.mayImport[layer, default: []].contains($0) } ?? false
                    || Self.alsoMay[layer, default: []].contains(module) || Self.targetAlsoMay[target, default: []].contains(module)
                    || Self.exceptions[file, default: []].contains(module)
                if !allowed { problems.append("\(file) imports \(module), which its layer (\(layer)) may not") }
            }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    /// An exception the code no longer needs is taken out of the map.
    @Test func everyExceptionIsStillNeeded() throws {
        let files = try Self.imports()
        for (file, modules) in Self.exceptions {
            let imported = Set(files.first { $0.file == file }?.modules ?? [])
            #expect(modules.isSubset(of: imported), "\(file) no longer imports \(modules.subtracting(imported))")
        }
    }

    /// A target names what it imports itself: no module hands another on (`@_exported`),
    /// so a file's imports are the whole of what it reaches, and the map above sees all of it.
    /// JOSEKit alone hands on its refusals (JOSEErrors), which the core carries without libcrypto.
    @Test func noTargetHandsOnAnother() throws {
        let found = try Child.run("/usr/bin/grep", ["-rl", "--include=*.swift", "^@_exported", Paths.packageRoot + "/Sources"])
        let files = found.stdout.split(separator: "\n").map { String($0.dropFirst(Paths.packageRoot.count + "/Sources/".count)) }
        #expect(files == ["JOSEKit/Algorithm.swift"], "\(files)")
    }
}
