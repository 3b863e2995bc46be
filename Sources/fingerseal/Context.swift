import FingersealCore
import Glibc
import SystemKit

/// What every command runs with: output, environment, and the user's vault.
struct Context: Sendable {
    let output: Output
    let environment: [String: String]

    init() {
        var environment: [String: String] = [:]
        for text in environmentEntries() {
            if let equals = text.firstIndex(of: "=") {
                environment[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
        }
        self.environment = environment
        self.output = Output(environment: environment)
    }

    /// The vault of the user running the command, and the options in force.
    func vault() throws -> (store: VaultStore, options: Options) {
        let (options, warnings) = try Options.loadSystem()
        for warning in warnings { output.note(warning) }
        guard let account = try VaultStore.guardedLookup({ try UserAccount.withID(geteuid()) }) else {
            throw FingersealError(.unknownUser, Messages.unknownUser)
        }
        let location = try VaultLocation.resolve(account: account, options: options,
                                                 stateHome: environment["XDG_STATE_HOME"])
        return (VaultStore(location: location), options)
    }
}

extension VaultStore {
    static func guardedLookup(_ body: () throws -> UserAccount?) throws -> UserAccount? {
        do { return try body() } catch {
            throw FingersealError(.systemError, Messages.systemFailure("look up the user account"), detail: "\(error)")
        }
    }
}
