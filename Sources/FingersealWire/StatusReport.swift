/// `status --json`: the broker writes it, scripts and the session agent read it (GetStatus,
/// GetCapabilities), one type for both ends. Keys in snake case on the wire
/// (`convertToSnakeCase` / `convertFromSnakeCase`). Not in the PAM module (Embedded Swift has
/// no Codable; scripts/build-module leaves this file out).
public struct StatusReport: Codable, Sendable {
    public struct Slot: Codable, Sendable {
        public let kind: String
        public let protection: String
        /// Whether the TPM holds part of its key.
        public let sealedToTpm: Bool
        public let usable: Bool
        /// usable, key-missing, tpm-changed, tpm-unreachable or pcrs-changed.
        public let state: String
        public let description: String

        public init(kind: String, protection: String, sealedToTpm: Bool, usable: Bool, state: String, description: String) {
            (self.kind, self.protection, self.sealedToTpm, self.usable, self.state, self.description) =
                (kind, protection, sealedToTpm, usable, state, description)
        }
    }

    public struct Lockout: Codable, Sendable {
        public let fingerFailures: Int
        public let fingerLocked: Bool
        public let pinFailures: Int
        public let pinLocked: Bool

        public init(fingerFailures: Int, fingerLocked: Bool, pinFailures: Int, pinLocked: Bool) {
            (self.fingerFailures, self.fingerLocked, self.pinFailures, self.pinLocked) = (fingerFailures, fingerLocked, pinFailures, pinLocked)
        }
    }

    public let vault: Bool
    public let directory: String
    public var enabledSince: String? = nil
    public var pinSet: Bool? = nil
    public var keyslots: [Slot]? = nil
    public var fingers: [String]? = nil
    public var signIn: String? = nil
    public var issuer: String? = nil
    public var clientId: String? = nil
    /// Who the identity provider said signed in (`Signed in as …`).
    public var signedInAs: String? = nil
    public var lockout: Lockout? = nil
    /// Touch to sign in is on for the account (`identify on`).
    public var identify: Bool? = nil
    /// Fingerprint unlock is on (the person's own switch: `on`, `off`).
    public var fingerUnlock: Bool? = nil
    /// The newest unlock or step-up confirmation the audit trail holds.
    public var lastVerified: String? = nil
    /// The login password is sealed for the keyring (`keyring on`).
    public var keyring: Bool? = nil
    /// With the keyring's copy: whether the vault holding it is sealed to the TPM (false:
    /// a stolen disk gives up the password). Nil without a copy.
    public var keyringSealedToTpm: Bool? = nil
    /// When the account password is next needed (a password rule in force); nil, never.
    public var password: PasswordNext? = nil

    public struct PasswordNext: Codable, Sendable {
        /// At the next sign-in.
        public let neededNow: Bool
        /// after-boot or after-time, when needed now.
        public let reason: String?
        /// When it will be needed (password_after), if not now.
        public let neededOn: String?
        /// After the next restart (password_after_boot).
        public let afterRestart: Bool

        public init(neededNow: Bool, reason: String?, neededOn: String?, afterRestart: Bool) {
            (self.neededNow, self.reason, self.neededOn, self.afterRestart) = (neededNow, reason, neededOn, afterRestart)
        }
    }
    /// "fprintd" when fprintd holds the fingers (then `fprintdFingers` and `fingersChanged`).
    public var reader: String? = nil
    /// For an application (the session agent's GetCapabilities): what can answer now.
    public var capabilities: Capabilities? = nil

    public struct Capabilities: Codable, Sendable {
        /// The ways that can unlock now: "finger", "pin", "password".
        public let methods: [String]
        /// "present", "absent", "lid-closed", or "unknown" (another request holds it).
        public let reader: String
        /// logind says the session is remote: the reader is not offered.
        public let remote: Bool

        public init(methods: [String], reader: String, remote: Bool) {
            (self.methods, self.reader, self.remote) = (methods, reader, remote)
        }
    }
    /// For an application's settings page (the agent's GetStatus): the facts as sentences
    /// in the person's language and zone, ready to show and to announce, with the times.
    public var said: Said? = nil

    public struct Said: Codable, Sendable {
        public let fingerUnlock: String
        public let enabledSince: String
        public let enabledSinceUnix: Int64
        public let lastVerified: String
        public let lastVerifiedUnix: Int64?
        public let fingers: String
        /// The enrolled fingers as people say them ("right index finger").
        public let fingerNames: [String]
        /// When the account password is next needed; nil: no password rule.
        public let password: String?

        public init(fingerUnlock: String, enabledSince: String, enabledSinceUnix: Int64, lastVerified: String,
                    lastVerifiedUnix: Int64?, fingers: String, fingerNames: [String], password: String?) {
            (self.fingerUnlock, self.enabledSince, self.enabledSinceUnix, self.lastVerified) =
                (fingerUnlock, enabledSince, enabledSinceUnix, lastVerified)
            (self.lastVerifiedUnix, self.fingers, self.fingerNames, self.password) = (lastVerifiedUnix, fingers, fingerNames, password)
        }
    }
    public var fprintdFingers: [String]? = nil
    public var fingersChanged: Bool? = nil
    /// The configuration's tpm= (auto, require, off).
    public var tpm: String? = nil
    /// The sign-in's tokens are bound to a key of this computer (RFC 9449); nil without a sign-in.
    public var boundToComputer: Bool? = nil
    /// Where that key is: "software" (sealed in the vault) or "tpm".
    public var proofKey: String? = nil

    public init(vault: Bool, directory: String) {
        (self.vault, self.directory) = (vault, directory)
    }
}
