import FingersealCore
import JOSEKit
import SystemKit

/// Which accounts provisioning may make (issue 31 §5): never a name a policy file or the
/// system keeps (`ReservedNames`), a name from an e-mail address only when the provider
/// verified it in a domain the administrator chose, and groups only from the configuration
/// file's top level.
extension Provisioning {
    /// Why `name` may not be made, or nil: reserved (said, with what reserves it logged), or
    /// unknown because a policy file could not be read (nothing is made while it cannot).
    func reservedRefusal(_ name: String) -> Refusal? {
        switch ReservedNames.check(name, extra: options.provisionReserved) {
        case .free:
            return nil
        case let .reserved(source):
            return refusal(.notPermitted, Messages.provisionReservedName(name), "reservedName",
                           detail: "\(name) is reserved (\(source))")
        case let .unknown(path, why):
            return refusal(.badConfiguration, Messages.provisionNamesUnchecked, "reservedNamesUnknown",
                           detail: "the reserved names cannot be read: \(path): \(why)")
        }
    }

    enum EmailVerdict: Equatable {
        case accepted, unverified, otherDomain
    }

    /// `user_claim=email_local` names an account after the part of the address before the @:
    /// only an address the provider verified (`email_verified` true), in one of `domains`
    /// (anyone may write any address into an account of their own at most providers, and the
    /// same part before the @ exists in every domain).
    static func emailVerdict(_ claims: IDTokenClaims, domains: [String]) -> EmailVerdict {
        guard claims.emailVerified == true else { return .unverified }
        let parts = (claims.email ?? "").split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, domains.contains(parts[1].lowercased()) else { return .otherDomain }
        return .accepted
    }

    /// A new account's supplementary groups, from the configuration file's top level (`site`)
    /// only: `provision_groups`, and where this stack signs in by touch, `identify_group` when
    /// the stack's is the top level's. A `[service NAME]` section or a module argument may
    /// choose the group a stack identifies among; it never puts a new account in a group (a
    /// lock screen names its own service's section). `touchGroup`: the group the account
    /// joins for touch to sign in, if any.
    static func groups(_ options: Options, site: Options) -> (groups: [String], touchGroup: String?) {
        let touch = options.identify && site.identifyGroup == options.identifyGroup ? site.identifyGroup : nil
        return (site.provisionGroups + (touch.map { [$0] } ?? []).filter { !site.provisionGroups.contains($0) }, touch)
    }
}
