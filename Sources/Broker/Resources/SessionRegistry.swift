import FingersealCore
import Glibc
import SodiumKit
import SystemKit

/// A user in one login session: what session tokens and step-up grants are kept for. The
/// liveness comes with the session's name (the same name always has the same one).
struct SessionKey: Hashable, Sendable {
    let uid: UInt32
    let session: String
    let liveness: SessionLiveness
}

/// What a grant is kept under in its session: the context, and for an application's
/// confirmation a hash of the agent's grant key, so that only requests carrying that key find
/// it (another program of the same user, asking for the same context, does not).
struct GrantName: Hashable, Sendable {
    let context: String
    let scope: [UInt8]?

    init(_ context: String, scope: [UInt8]? = nil) {
        self.context = context
        self.scope = scope
    }

    init(_ confirmation: UnlockRequest.Confirmation) {
        self.init(confirmation.context, scope: confirmation.scope)
    }
}

/// A step-up grant: CONTEXT was confirmed in this session at `madeAt`, and counts until
/// `expiresAt` (and, when held by a command, no longer than the connection that waits for it:
/// `holder`). A check may ask for a younger confirmation than that (`madeWithin`).
struct Grant: Sendable {
    let method: String
    let madeAt: Int64
    let expiresAt: Int64
    /// The connection holding it; nil for a grant with a TTL only.
    let holder: UInt64?
}

/// What the broker keeps in memory only (design §3): session access tokens and step-up
/// grants per (uid, login session), and the tickets that carry a PAM authentication's token
/// to the session it opens. A broker restart forgets everything here: the next request asks
/// again. Bounded per user (sessions, grants per session, tickets), and a session's entries go
/// when it ends (`sweep`).
final class SessionRegistry: @unchecked Sendable {
    private struct Entry {
        var token: AccessToken? = nil
        var grants: [GrantName: Grant] = [:]
        var lastUse: Double
    }

    private let lock = ThreadLock()
    private var entries: [SessionKey: Entry] = [:]
    private var tickets: [String: (uid: UInt32, token: AccessToken, madeAt: Double)] = [:]
    private var nextHolder: UInt64 = 1
    /// How long an authentication's token waits for its session to open.
    static let ticketLifetime = 120.0
    /// A user can start sessions at will (setsid): what one user may have kept at once.
    static let maxSessionsPerUser = 32
    static let maxGrantsPerSession = 32
    static let maxTicketsPerUser = 16

    func token(_ key: SessionKey) -> AccessToken? { lock.locked { entries[key]?.token } }

    func setToken(_ key: SessionKey, _ token: AccessToken) { lock.locked { update(key) { $0.token = token } } }

    /// Drops everything a session holds (its close).
    func dropSession(_ key: SessionKey) -> (token: Bool, grants: Int) {
        lock.locked {
            let entry = entries.removeValue(forKey: key)
            return (entry?.token != nil, entry?.grants.count ?? 0)
        }
    }

    /// Drops every session's token and grants of `uid` (its vault was deleted).
    func dropUser(_ uid: UInt32) {
        lock.locked {
            entries = entries.filter { $0.key.uid != uid }
            tickets = tickets.filter { $0.value.uid != uid }
        }
    }

    /// Drops every session's access token of `uid` (and the tickets carrying one): its
    /// sign-in ended. Step-up grants stay; they confirmed the person, not the sign-in.
    func dropTokens(_ uid: UInt32) {
        lock.locked {
            for key in entries.keys where key.uid == uid { entries[key]?.token = nil }
            tickets = tickets.filter { $0.value.uid != uid }
        }
    }

    /// The grant for `context`, if it is still valid and was made at most `madeWithin`
    /// seconds ago (nil: whatever its age); an expired one is dropped on the way.
    func grant(_ key: SessionKey, _ name: GrantName, now: Int64, madeWithin maxAge: Int64? = nil) -> Grant? {
        lock.locked {
            guard let grant = entries[key]?.grants[name] else { return nil }
            if now >= grant.expiresAt {
                entries[key]?.grants[name] = nil
                return nil
            }
            if let maxAge, now - grant.madeAt >= maxAge { return nil }
            return grant
        }
    }

    func setGrant(_ key: SessionKey, _ name: GrantName, _ grant: Grant) {
        lock.locked {
            update(key) { entry in
                // One session can name contexts at will: the oldest confirmation goes first.
                if entry.grants[name] == nil, entry.grants.count >= SessionRegistry.maxGrantsPerSession,
                   let oldest = entry.grants.min(by: { $0.value.madeAt < $1.value.madeAt })?.key {
                    entry.grants[oldest] = nil
                }
                entry.grants[name] = grant
            }
        }
    }

    /// Drops the grant kept under `name`; returns whether there was one.
    func endGrant(_ key: SessionKey, _ name: GrantName, holder: UInt64? = nil) -> Bool {
        lock.locked {
            guard let grant = entries[key]?.grants[name], holder == nil || grant.holder == holder else { return false }
            entries[key]?.grants[name] = nil
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
            let own = tickets.filter { $0.value.uid == uid }
            if own.count >= SessionRegistry.maxTicketsPerUser, let oldest = own.min(by: { $0.value.madeAt < $1.value.madeAt })?.key {
                tickets[oldest] = nil
            }
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

    /// Drops what has ended: expired grants and tickets, and every entry of a session that is
    /// over (its leader gone, logind closing it), so a new session that takes its number
    /// inherits nothing. The accept loop calls this every few seconds.
    func sweep(now: Int64) {
        let keys = lock.locked { Array(entries.keys) }
        // Outside the lock: liveness reads /proc or asks logind.
        let ended = Set(keys.filter { !$0.liveness.isAlive })
        lock.locked {
            for key in ended { entries[key] = nil }
            for (key, entry) in entries {
                // An expired token goes, and a bound token's key with it.
                let token = entry.token.flatMap { now < $0.expiresAt ? $0 : nil }
                let grants = entry.grants.filter { now < $0.value.expiresAt }
                if grants.isEmpty && token == nil {
                    entries[key] = nil
                } else {
                    entries[key]?.grants = grants
                    entries[key]?.token = token
                }
            }
            let monotonic = monotonicSeconds()
            tickets = tickets.filter { monotonic - $0.value.madeAt < SessionRegistry.ticketLifetime }
        }
    }

    /// Changes (or adds) `key`'s entry; a user at the limit of sessions loses the one used
    /// longest ago. Under the lock.
    private func update(_ key: SessionKey, _ change: (inout Entry) -> Void) {
        let now = monotonicSeconds()
        if entries[key] == nil {
            let own = entries.filter { $0.key.uid == key.uid }
            if own.count >= SessionRegistry.maxSessionsPerUser, let oldest = own.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
                entries[oldest] = nil
            }
        }
        var entry = entries[key] ?? Entry(lastUse: now)
        change(&entry)
        entry.lastUse = now
        entries[key] = entry
    }
}
