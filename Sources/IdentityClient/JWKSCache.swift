import CurlKit
import FingersealCore
import FoundationEssentials
import JOSEKit
import SystemKit

/// The providers' key sets, in memory, one per jwks_uri, shared by every request the broker
/// serves (hence the lock, one TSan sees; the fetch itself runs outside it, so one slow
/// provider does not hold up the others).
///
/// A set is fetched when first needed, again when a token names a kid it does not hold (the
/// provider rotated its keys), and again after `maxAge`. Refetches for unknown kids (and
/// retries of a failed daily refetch) are at most one per URI per `refetchInterval`, whatever
/// the tokens say: a token with made-up kids cannot make the broker hammer the provider. A URI with no set yet (never fetched, or the first fetch
/// failed) is fetched on every call, as the token request before it was made on every call.
public final class JWKSCache: Sendable {
    public static let refetchInterval: Int64 = 60
    public static let maxAge: Int64 = 24 * 60 * 60

    private struct Entry {
        var keys: JSONWebKeySet
        var fetchedAt: Int64
        /// When an unknown kid last made this set be fetched again; nil after a fetch for
        /// another reason (the first, or the daily one).
        var lastRefetch: Int64?
    }

    private let entries = LockedValue<[String: Entry]>([:])
    private let clock: any FingersealCore.Clock

    public init(clock: any FingersealCore.Clock = SystemClock()) {
        self.clock = clock
    }

    /// The key set at `jwksURI`, fetched or refetched as described above; a set that still
    /// lacks `keyID` after that is returned as it is (verification then says the key is unknown).
    public func keys(for jwksURI: String, keyID: String?, http: HTTPClient) throws(TokenFailure) -> JSONWebKeySet {
        let now = clock.now()
        enum Plan { case cached(JSONWebKeySet), fetch(forKeyID: Bool) }
        let plan: Plan = entries.locked { entries in
            guard var entry = entries[jwksURI] else { return .fetch(forKeyID: false) }
            let fresh = now - entry.fetchedAt < Self.maxAge
            let known = keyID == nil || entry.keys.contains(keyID: keyID)
            if fresh && known { return .cached(entry.keys) }
            // A clock that went backwards does not hold refetches off.
            if let last = entry.lastRefetch, now - last < Self.refetchInterval, now >= last { return .cached(entry.keys) }
            entry.lastRefetch = now
            entries[jwksURI] = entry
            return .fetch(forKeyID: fresh)
        }
        switch plan {
        case let .cached(keys):
            return keys
        case let .fetch(forKeyID):
            let keys = try Self.fetch(jwksURI, http: http)
            entries.locked { $0[jwksURI] = Entry(keys: keys, fetchedAt: now, lastRefetch: forKeyID ? now : nil) }
            return keys
        }
    }

    static func fetch(_ jwksURI: String, http: HTTPClient) throws(TokenFailure) -> JSONWebKeySet {
        try Discovery.requireSecure(jwksURI)
        var capped = http
        // The set plus room for the headers.
        capped.configuration.maxResponseBytes = min(http.configuration.maxResponseBytes, JSONWebKeySet.maxBytes + 16 * 1024)
        let response: HTTPResponse
        do {
            response = try capped.send(.get(jwksURI, headers: [("Accept", "application/jwk-set+json, application/json")]))
        } catch {
            throw TokenRequests.failure(for: error)
        }
        guard response.status == 200 else {
            throw response.status >= 500 ? .unreachable(.answered(status: response.status, by: .keySet))
                                         : .badConfiguration(.answered(status: response.status, by: .keySet))
        }
        do {
            return try JSONWebKeySet(json: response.body)
        } catch {
            throw .malformed(.keySet(error))
        }
    }
}
