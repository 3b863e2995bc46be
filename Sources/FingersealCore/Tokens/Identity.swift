import Glibc
import SystemKit

/// Who the identity provider says signed in: from an ID token whose signature and claims
/// were verified, or from its userinfo endpoint called with a fresh access token.
public struct SignedInIdentity: Codable, Equatable, Sendable {
    public var subject: String
    public var preferredUsername: String?
    public var email: String?

    public init(subject: String, preferredUsername: String? = nil, email: String? = nil) {
        self.subject = subject
        self.preferredUsername = preferredUsername
        self.email = email
    }

    /// What people are shown ("Signed in as …"): the e-mail address, else the user name,
    /// else the subject.
    public var display: String { email ?? preferredUsername ?? subject }
}

/// `user_claim=`: which claim must equal the Linux user name.
public enum UserClaim: String, Sendable {
    case preferredUsername = "preferred_username"
    /// The whole address must be the user name.
    case email
    /// The part before the @ must be the user name.
    case emailLocalPart = "email_local"
    /// The subject, through the root-owned map file (`user_map=`): "SUBJECT USER" lines.
    case sub
}

/// The IdP account bound to the Linux account (issue 12 §2).
public enum IdentityBinding {
    public enum Verdict: Equatable, Sendable {
        case matches
        /// The sentence to say; nothing may be stored.
        case refused(String)
    }

    /// Whether `identity` may sign in as `user` under `claim` (nil: nothing is enforced).
    public static func check(_ identity: SignedInIdentity, user: String, claim: UserClaim?, map: UserMap?) -> Verdict {
        guard let claim else { return .matches }
        guard let named = mappedName(identity, claim: claim, map: map) else {
            return .refused(Messages.identityClaimMissing(identity.display, claim.rawValue, user))
        }
        return named == user ? .matches : .refused(Messages.identityMismatch(identity.display, user))
    }

    /// The Linux user name `identity` stands for under `claim`; nil when the claim is missing
    /// (or the subject is not in the map).
    public static func mappedName(_ identity: SignedInIdentity, claim: UserClaim, map: UserMap?) -> String? {
        switch claim {
        case .preferredUsername: return identity.preferredUsername
        case .email: return identity.email
        case .emailLocalPart: return identity.email.map { String($0.prefix { $0 != "@" }) }
        case .sub: return map?.user(forSubject: identity.subject)
        }
    }

    /// The same under `options` (`user_claim=`, and `user_map=` read when the claim is `sub`).
    public static func check(_ identity: SignedInIdentity, user: String, options: Options) throws -> Verdict {
        guard let claim = options.userClaim else { return .matches }
        let map = claim == .sub ? try UserMap.load(path: options.userMap) : nil
        return check(identity, user: user, claim: claim, map: map)
    }

    /// A later answer of the same sign-in: the same subject, or the chain ends.
    public static func isSameAccount(_ later: SignedInIdentity, as earlier: SignedInIdentity) -> Bool {
        later.subject == earlier.subject
    }
}

/// `user_map=`: the root-owned file that maps IdP subjects to Linux user names, one
/// "SUBJECT USER" pair per line, `#` comments.
public struct UserMap: Equatable, Sendable {
    public static let defaultPath = "/etc/fingerseal/users.map"
    static let maxSize = 1 << 20

    private var users: [String: String] = [:]

    public init(text: String) {
        for line in text.split(whereSeparator: \.isNewline) {
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let fields = content.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count == 2 else { continue }
            users[String(fields[0])] = String(fields[1])
        }
    }

    public func user(forSubject subject: String) -> String? { users[subject] }

    /// Read like the configuration file: root's, not writable by others, bounded. A missing
    /// file maps nobody.
    public static func load(path: String = defaultPath) throws -> UserMap {
        guard let bytes = try Options.readSystemFile(path, sizeLimit: maxSize) else { return UserMap(text: "") }
        return UserMap(text: String(decoding: bytes, as: UTF8.self))
    }
}
