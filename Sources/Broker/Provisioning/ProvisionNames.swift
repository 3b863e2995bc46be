import FingersealCore
import FingersealWire
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
        switch Provisioning.reserved(name, extra: options.provisionReserved) {
        case .free:
            return nil
        case let .reserved(source):
            return refusal(.notPermitted, Messages.provisionReservedName(name), .refusal(.reservedName),
                           detail: "\(name) is reserved (\(source))")
        case let .unknown(path, why):
            return refusal(.badConfiguration, Messages.provisionNamesUnchecked, .refusal(.reservedNamesUnknown),
                           detail: "the reserved names cannot be read: \(path): \(why)")
        }
    }

    /// Whether `name` is reserved. The policy files are read where they can be: polkit keeps
    /// its rule directories polkitd's alone (0700), which the broker's sandbox, root without
    /// CAP_DAC_READ_SEARCH, cannot open. Under systemd they are read by the broker's own
    /// program in a transient unit of its own whose one capability is that one (the way
    /// useradd runs: `SystemAccounts`); elsewhere (containers, tests: root unconfined) here.
    static func reserved(_ name: String, extra: [String]) -> ReservedNames.Verdict {
        if ReservedNames.builtIn.contains(name) { return .reserved(by: "built-in") }
        if extra.contains(name) { return .reserved(by: "provision_reserved") }
        guard SystemAccounts.underSystemd else { return ReservedNames.check(name, extra: []) }
        guard let program = SystemAccounts.ownProgram else { return .unknown(path: "/proc/self/exe", why: "unreadable") }
        var output: [UInt8]? = []
        let status: Int32
        do {
            status = try SystemAccounts.run([program, ReservedNames.checkOption, name], properties: SystemAccounts.policyReaderProperties,
                                            capturing: &output)
        } catch {
            return .unknown(path: program, why: "\(error)")
        }
        guard status == 0, let verdict = ReservedNames.Verdict(line: String(decoding: output ?? [], as: UTF8.self)) else {
            return .unknown(path: program, why: "exit status \(status)")
        }
        return verdict
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

/// `fingersealed --reserved-name NAME`: what the policy files say of one name, as one line
/// (`ReservedNames.Verdict.line`), for the broker that runs it outside its sandbox.
public enum ReservedNameProbe {
    public static let option = ReservedNames.checkOption

    /// Nil for a string that is no user name.
    public static func verdictLine(_ name: String) -> String? {
        AccountName.isValid(name) ? ReservedNames.check(name, extra: []).line : nil
    }
}
