import CurlKit
import Dispatch
import FoundationEssentials
import Glibc
import Testing
@testable import FingersealCore
@testable import IdentityClient
import SodiumKit

/// The local test IdP (django-oauth-toolkit on 127.0.0.1, a fresh database per instance).
final class LocalIdP {
    static var available: Bool { access(Paths.packageRoot + "/.venv/bin/python", X_OK) == 0 }

    let temp: TempDirectory
    let issuer: String
    let origin: String
    let http = HTTPClient(configuration: .init(connectTimeout: 2, timeout: 10))

    init() throws {
        temp = try TempDirectory()
        let start = try Child.run(Paths.packageRoot + "/scripts/local-idp", ["start", temp.file("idp")])
        guard start.status == 0, let line = start.stdout.split(separator: "\n").first,
              let issuer = line.split(separator: " ").first(where: { $0.hasPrefix("issuer=") })?.dropFirst("issuer=".count)
        else { throw TestFailure("the local IdP did not start: \(start.all)") }
        self.issuer = String(issuer)
        origin = String(self.issuer.dropLast("/o".count))
    }

    deinit {
        _ = try? Child.run(Paths.packageRoot + "/scripts/local-idp", ["stop", temp.file("idp")])
    }

    @discardableResult
    func hook(_ path: String, _ fields: [(name: String, value: String)]) throws -> String {
        let response = try http.send(.postForm(origin + path, fields: fields))
        guard response.status == 200 else { throw TestFailure("\(path) answered \(response.status)") }
        return String(decoding: response.body, as: UTF8.self)
    }

    /// The IdP's account of the user's newest refresh-token family (JSON).
    func family(_ user: String) throws -> String {
        String(decoding: try http.send(.get(origin + "/test/refresh-family-alive?username=\(user)")).body, as: UTF8.self)
    }

    func familyAlive(_ user: String) throws -> Bool {
        let body = try family(user)
        return body.contains(#""alive": true"#) && body.contains(#""reuse_detected": false"#)
    }

    /// Signs alice in (password grant) and seals the chain in `vault`, as `fingerseal login`
    /// does: refresh token, provider, sign-in active, last refresh at `time`.
    func signIn(_ vault: UnlockedVault, at time: Int64 = SystemClock().now()) throws {
        let client = try client()
        let tokens = try client.passwordGrant(username: "alice", password: secret("wonderland-7"), scope: "openid offline_access")
        guard let refresh = tokens.refreshToken else { throw TestFailure("the IdP issued no refresh token") }
        try vault.update { try $0.signedIn(refreshToken: refresh, provider: client.providerRecord, at: time) }
    }

    func client(_ id: String = "fingerseal-test", timeout: Double = 10) throws -> OAuthClient {
        let http = HTTPClient(configuration: .init(connectTimeout: 2, timeout: timeout))
        return OAuthClient(metadata: try Discovery.discover(issuer: issuer, http: http), clientID: id, http: http)
    }
}

@Suite(.enabled(if: LocalIdP.available)) struct IdPTests {
    /// A vault holding a refresh token from a real sign-in (password grant for alice).
    func signedInVault(_ idp: LocalIdP) throws -> (TestVault, UnlockedVault) {
        let v = try TestVault()
        let vault = try v.create()
        try idp.signIn(vault, at: 1_000_000)
        return (v, vault)
    }

    @Test func discoveryIsValidated() throws {
        let idp = try LocalIdP()
        let http = HTTPClient(configuration: .init(connectTimeout: 2, timeout: 5))
        let metadata = try Discovery.discover(issuer: idp.issuer, http: http)
        #expect(metadata.deviceAuthorizationEndpoint != nil && metadata.revocationEndpoint != nil)
        #expect(throws: TokenFailure.self) { _ = try Discovery.discover(issuer: idp.origin + "/other", http: http) }
        // Plain http off loopback is refused before anything is sent.
        #expect(throws: TokenFailure.badConfiguration("http://idp.example.org/o must use https (plain http is allowed only on loopback)")) {
            _ = try Discovery.discover(issuer: "http://idp.example.org/o", http: http)
        }
    }

    @Test func fiftyRotationsTenOfThemInConcurrentPairsNeverReuse() throws {
        let idp = try LocalIdP()
        let (v, vault) = try signedInVault(idp)
        let client = try idp.client()
        var seen: Set<[UInt8]> = []
        for _ in 0..<30 {
            guard case let .refreshed(tokens) = try TokenChain.refresh(vault, client: client, offlineGrace: 0) else {
                throw TestFailure("not refreshed")
            }
            #expect(seen.insert(tokens.accessToken.copyBytes()).inserted)
        }
        // Two unlocks at once (own vault handles, as the CLI and PAM would have): the lock
        // makes the second wait and send the rotated token.
        for _ in 0..<10 {
            let pair = VaultPair([try Vault.unlockWithDevice(v.store), try Vault.unlockWithDevice(v.store)])
            let failures = Failures()
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                do { _ = try TokenChain.refresh(pair.vaults[index], client: client, offlineGrace: 0).checked() } catch { failures.add("\(error)") }
            }
            #expect(failures.all.isEmpty, "\(failures.all)")
        }
        #expect(try idp.familyAlive("alice"), "the IdP saw a refresh token reused")
    }

    @Test func aRevokedChainMeansSignInRequired() throws {
        let idp = try LocalIdP()
        let (v, vault) = try signedInVault(idp)
        try idp.hook("/test/revoke-user-tokens", [("username", "alice")])
        expectOutcome(.signInRequired) { _ = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: 0).checked() }
        #expect(try Vault.status(v.store)?.signIn == .required)
        // Without asking the IdP again.
        try idp.hook("/test/mode", [("mode", "down-5xx")])
        expectOutcome(.signInRequired) { _ = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: 0).checked() }
    }

    @Test func offlineGraceAllowsThenDenies() throws {
        let idp = try LocalIdP()
        let (v, vault) = try signedInVault(idp)
        let before = try #require(readFile(v.directory + "/vault"))
        try idp.hook("/test/mode", [("mode", "down-5xx")])
        let grace = 7 * 24 * 3600
        let inside = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: grace,
                                            clock: FixedClock(time: 1_000_000 + 3600))
        guard case .offline(since: 1_000_000) = inside else { throw TestFailure("expected offline, got \(inside)") }
        expectOutcome(.unavailable) {
            _ = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: grace,
                                       clock: FixedClock(time: 1_000_000 + Int64(grace) + 1)).checked()
        }
        #expect(readFile(v.directory + "/vault") == before, "the refresh token is kept as it was")
        // The IdP back: the chain goes on.
        try idp.hook("/test/mode", [("mode", "normal")])
        guard case .refreshed = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: grace) else {
            throw TestFailure("not refreshed after the IdP came back")
        }
    }

    @Test(arguments: ["garbage", "empty-error", "oversized", "nonstandard-error"])
    func badAnswersLeaveTheVaultUnchanged(mode: String) throws {
        let idp = try LocalIdP()
        let (v, vault) = try signedInVault(idp)
        let before = try #require(readFile(v.directory + "/vault"))
        try idp.hook("/test/mode", [("mode", mode)])
        expectOutcome(.unavailable) { _ = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: 0).checked() }
        #expect(readFile(v.directory + "/vault") == before)
        try idp.hook("/test/mode", [("mode", "normal")])
        guard case .refreshed = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: 0) else {
            throw TestFailure("the chain did not survive \(mode)")
        }
    }

    @Test func aSlowIdPIsCutOffAtTheTimeout() throws {
        let idp = try LocalIdP()
        let (v, vault) = try signedInVault(idp)
        defer { withExtendedLifetime(v) {} }
        let client = try idp.client(timeout: 2)
        try idp.hook("/test/mode", [("mode", "slow"), ("seconds", "20")])
        let start = VirtualSensor.now()
        expectOutcome(.unavailable) { _ = try TokenChain.refresh(vault, client: client, offlineGrace: 0).checked() }
        let elapsed = VirtualSensor.now() - start
        #expect(elapsed >= 1.9 && elapsed < 3.5, "\(elapsed) s")
    }

    @Test func deviceGrantApprovedThroughTheIdP() throws {
        let idp = try LocalIdP()
        let client = try idp.client("fingerseal-device")
        let authorization = try client.startDeviceAuthorization(scope: "openid offline_access")
        #expect(authorization.verificationURIComplete?.contains(authorization.userCode) == true)
        #expect(throws: TokenFailure.authorizationPending) { _ = try client.pollDevice(authorization) }
        try idp.hook("/test/approve-device", [("user_code", authorization.userCode), ("username", "alice")])
        let tokens = try client.pollDevice(authorization)
        #expect(tokens.refreshToken != nil)
        // Denied: access_denied.
        let denied = try client.startDeviceAuthorization(scope: "openid offline_access")
        try idp.hook("/test/deny-device", [("user_code", denied.userCode)])
        #expect(throws: TokenFailure.accessDenied) { _ = try client.pollDevice(denied) }
    }

    @Test func revocationEndsTheChain() throws {
        let idp = try LocalIdP()
        let client = try idp.client("fingerseal-password")
        let tokens = try client.passwordGrant(username: "bob", password: secret("builder-3"), scope: "openid")
        let refresh = try #require(tokens.refreshToken)
        #expect(try client.revoke(refresh))
        #expect(throws: TokenFailure.chainEnded("invalid_grant")) { _ = try client.refresh(refresh) }
    }
}

/// Two vault handles, each used by one thread only.
final class VaultPair: @unchecked Sendable {
    let vaults: [UnlockedVault]
    init(_ vaults: [UnlockedVault]) { self.vaults = vaults }
}

/// Errors collected from concurrent work.
final class Failures: @unchecked Sendable {
    private var items: [String] = []
    private let lock = TestLock()
    func add(_ item: String) { lock.with { items.append(item) } }
    var all: [String] { lock.with { items } }
}

final class TestLock: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }
    func with<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return body()
    }
}
