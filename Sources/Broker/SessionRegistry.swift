import FingersealCore
import Glibc
import SodiumKit
import SystemKit

/// A user in one login session: what session tokens and step-up grants are kept for.
struct SessionKey: Hashable, Sendable {
    let uid: UInt32
    let session: String
}

/// A step-up grant: CONTEXT was confirmed in this session until `expiresAt`, or, when held
/// by a command, for as long as the connection that waits for it (`holder`).
struct Grant: Sendable {
    let method: String
    let expiresAt: Int64
    /// The connection holding it; nil for a grant with a TTL.
    let holder: UInt64?
}

/// What the broker keeps in memory only (design §3): session access tokens and step-up
/// grants per (uid, login session), and the tickets that carry a PAM authentication's token
/// to the session it opens. A broker restart forgets everything here: the next request asks
/// again.
final class SessionRegistry: @unchecked Sendable {
    private let lock = ThreadLock()
    private var tokens: [SessionKey: AccessToken] = [:]
    private var grants: [SessionKey: [String: Grant]] = [:]
    private var tickets: [String: (uid: UInt32, token: AccessToken, madeAt: Double)] = [:]
    private var nextHolder: UInt64 = 1
    /// How long an authentication's token waits for its session to open.
    static let ticketLifetime = 120.0

    func token(_ key: SessionKey) -> AccessToken? { lock.locked { tokens[key] } }

    func setToken(_ key: SessionKey, _ token: AccessToken) { lock.locked { tokens[key] = token } }

    /// Drops everything a session holds (its close).
    func dropSession(_ key: SessionKey) -> (token: Bool, grants: Int) {
        lock.locked {
            let token = tokens.removeValue(forKey: key) != nil
            let count = grants.removeValue(forKey: key)?.count ?? 0
            return (token, count)
        }
    }

    /// Drops every session's token and grants of `uid` (its vault was deleted).
    func dropUser(_ uid: UInt32) {
        lock.locked {
            tokens = tokens.filter { $0.key.uid != uid }
            grants = grants.filter { $0.key.uid != uid }
            tickets = tickets.filter { $0.value.uid != uid }
        }
    }

    /// Drops every session's access token of `uid` (and the tickets carrying one): its
    /// sign-in ended. Step-up grants stay; they confirmed the person, not the sign-in.
    func dropTokens(_ uid: UInt32) {
        lock.locked {
            tokens = tokens.filter { $0.key.uid != uid }
            tickets = tickets.filter { $0.value.uid != uid }
        }
    }

    /// The valid grant for `context`; an expired one is dropped on the way.
    func grant(_ key: SessionKey, _ context: String, now: Int64) -> Grant? {
        lock.locked {
            guard let grant = grants[key]?[context] else { return nil }
            if grant.holder == nil && now >= grant.expiresAt {
                grants[key]?[context] = nil
                return nil
            }
            return grant
        }
    }

    func setGrant(_ key: SessionKey, _ context: String, _ grant: Grant) { lock.locked { grants[key, default: [:]][context] = grant } }

    /// Drops the grant for `context`; returns whether there was one.
    func endGrant(_ key: SessionKey, _ context: String, holder: UInt64? = nil) -> Bool {
        lock.locked {
            guard let grant = grants[key]?[context], holder == nil || grant.holder == holder else { return false }
            grants[key]?[context] = nil
            return true
        }
    }

    func newHolder() -> UInt64 {
        lock.locked {
            defer { nextHolder += 1 }
            return nextHolder
        }
    }

    /// Keeps `token` for the session pam.open-session will open; returns the ticket.
    func makeTicket(uid: UInt32, token: AccessToken) -> String? {
        guard let random = try? Sodium.randomBytes(16) else { return nil }
        let ticket = Encoding.hex(random)
        lock.locked {
            let now = monotonicSeconds()
            tickets = tickets.filter { now - $0.value.madeAt < SessionRegistry.ticketLifetime }
            tickets[ticket] = (uid, token, now)
        }
        return ticket
    }

    /// The token a ticket carries, once, for its user only. The ticket is used up by any
    /// try: offered for another user (sudo and su change PAM_USER before the session opens),
    /// it gives nothing, then or later.
    func redeem(_ ticket: String, uid: UInt32) -> AccessToken? {
        lock.locked {
            guard let entry = tickets.removeValue(forKey: ticket), entry.uid == uid,
                  monotonicSeconds() - entry.madeAt < SessionRegistry.ticketLifetime else { return nil }
            return entry.token
        }
    }
}
