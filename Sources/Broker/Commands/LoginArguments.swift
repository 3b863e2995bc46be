import FingersealCore
import FingersealWire
import SodiumKit

/// `login`'s arguments over the configuration file (issue 12 §1, the fleet configuration).
extension LoginCommand {
    /// What one sign-in uses: the request's arguments over the configuration file's
    /// `issuer=`, `client_id=`, `scope=`, `flow=`, except where the file fixed one.
    struct SignIn {
        let issuer: String
        let clientID: String
        let scope: String
        let flow: SignInFlow
        /// The administrator's (`client_secret_file=`) or the caller's (`--client-secret-file`).
        let secret: SecureBytes?
    }

    /// Resolves the arguments, before anything is asked or sent:
    /// - an argument for an option the file fixed is refused (usage), unless it repeats the
    ///   file's value; `--client-secret-file` is refused once the issuer, the client or the
    ///   secret is fixed;
    /// - the administrator's secret (read here, as root) goes only to the file's client at the
    ///   file's issuer, never to one an argument names; given both, the administrator's is
    ///   used and the caller's is not even asked for.
    static func resolve(_ call: Call) throws -> SignIn {
        let options = call.settings
        let given = call.options(for: LoginOptions.self)
        let callerSecret = given.clientSecret
        // The configuration's name of each setting an argument may change (the secret's
        // file never reaches the broker: only that the caller has one).
        let arguments: [(option: String, argument: Option, value: String?)] = [
            ("issuer", .issuer, given.issuer), ("client_id", .clientID, given.clientID), ("scope", .scope, given.scope),
            ("flow", .flow, given.flow?.rawValue),
        ]
        for (option, argument, value) in arguments where options.fixed.contains(option) {
            if let value, !sameSetting(option, value, options.setting(option)) {
                throw FingersealError(.usage, Messages.fixedArgument(argument.name, option))
            }
        }
        if callerSecret, let fixed = ["client_secret_file", "client_id", "issuer"].first(where: options.fixed.contains) {
            throw FingersealError(.usage, Messages.fixedArgument(Option.clientSecret.name, fixed))
        }
        guard let issuer = given.issuer ?? options.issuer, let clientID = given.clientID ?? options.clientID,
              !issuer.isEmpty, !clientID.isEmpty else {
            throw FingersealError(.usage, Messages.signInNotConfigured)
        }
        let flow = given.flow ?? options.flow
        let secret: SecureBytes?
        if let path = options.clientSecretFile, sameSetting("issuer", issuer, options.issuer), clientID == options.clientID {
            secret = try Options.readClientSecret(path)
            if callerSecret { call.conversation.info(Messages.administratorSecretWins) }
        } else {
            secret = callerSecret ? try askClientSecret(call) : nil
        }
        return SignIn(issuer: issuer, clientID: clientID, scope: given.scope ?? options.scope, flow: flow, secret: secret)
    }

    /// Whether an argument repeats the file's value (an issuer with or without its trailing
    /// slash is the same issuer).
    static func sameSetting(_ option: String, _ given: String, _ configured: String?) -> Bool {
        guard let configured else { return false }
        guard option == "issuer" else { return given == configured }
        func trimmed(_ url: String) -> Substring { url.hasSuffix("/") ? url.dropLast() : Substring(url) }
        return trimmed(given) == trimmed(configured)
    }
}
