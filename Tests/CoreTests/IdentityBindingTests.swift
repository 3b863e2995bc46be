import Testing
@testable import FingersealCore
import SodiumKit
@testable import TestSupport

/// The IdP account bound to the Linux account (issue 12 §2): the policy alone; LoginTests
/// and TokenCLITests run it against the local IdP.
@Suite struct IdentityBindingTests {
    let alice = SignedInIdentity(subject: "7f3a", preferredUsername: "alice", email: "alice@example.org")

    @Test func eachClaimMatchesOnlyItsUser() {
        let map = UserMap(text: "# subject user\n7f3a alice\n9c1d\tbob  # bob's\nbroken line with three\n")
        let table: [(UserClaim?, String, Bool)] = [
            (nil, "mallory", true), // nothing enforced
            (.preferredUsername, "alice", true), (.preferredUsername, "bob", false),
            (.email, "alice@example.org", true), (.email, "alice", false),
            (.emailLocalPart, "alice", true), (.emailLocalPart, "alice@example.org", false),
            (.sub, "alice", true), (.sub, "bob", false),
        ]
        for (claim, user, matches) in table {
            let verdict = IdentityBinding.check(alice, user: user, claim: claim, map: map)
            #expect((verdict == .matches) == matches, "\(String(describing: claim)) as \(user): \(verdict)")
        }
        #expect(map.user(forSubject: "9c1d") == "bob" && map.user(forSubject: "broken") == nil)
    }

    @Test func aMismatchNamesBothAccounts() {
        guard case let .refused(sentence) = IdentityBinding.check(alice, user: "bob", claim: .preferredUsername, map: nil) else {
            Issue.record("not refused")
            return
        }
        #expect(sentence.contains("alice@example.org") && sentence.contains("bob") && sentence.contains("nothing was stored"))
        // A claim the provider did not send refuses too: no guessing.
        let bare = SignedInIdentity(subject: "7f3a")
        #expect(IdentityBinding.check(bare, user: "alice", claim: .email, map: nil) != .matches)
        #expect(IdentityBinding.check(bare, user: "alice", claim: .sub, map: nil) != .matches)
    }

    @Test func theVaultKeepsWhoSignedInUntilSignOut() throws {
        let vault = try TestVault()
        let created = try vault.create()
        try created.update {
            try $0.signedIn(refreshToken: secret("rt"), provider: ProviderRecord(issuer: "https://idp.example", clientID: "c"),
                            identity: alice, at: 1)
        }
        #expect(try Vault.status(vault.store)?.identity == alice)
        try created.update { $0.endChain() }
        let ended = try Vault.status(vault.store)
        #expect(ended?.signIn == .required && ended?.identity == alice)
        #expect(try created.secret(TokenChain.refreshTokenRecord) == nil, "the other account's token is gone")
        try created.update { $0.signedOut() }
        #expect(try Vault.status(vault.store)?.identity == nil)
    }

    /// A refresh that names another account ends the chain; one that names the same keeps it;
    /// one that cannot be checked keeps the rotated token and hands out nothing.
    @Test func aRefreshNamingAnotherAccountEndsTheChain() throws {
        struct Rotating: TokenClient {
            func refresh(_ refreshToken: SecureBytes) throws(TokenFailure) -> TokenSet {
                TokenSet(accessToken: secret("at"), refreshToken: secret("rt-next"), expiresIn: 300, scope: nil)
            }
        }
        let vault = try TestVault()
        let created = try vault.create()
        try created.update {
            try $0.signedIn(refreshToken: secret("rt"), provider: ProviderRecord(issuer: "https://idp.example", clientID: "c"),
                            identity: alice, at: 1)
        }
        let same = try TokenChain.refresh(created, client: Rotating(), offlineGrace: 60) { _, _, _, _ throws(TokenFailure) in .unchanged }
        #expect(same.step == .refreshed)
        let unsure = try TokenChain.refresh(created, client: Rotating(), offlineGrace: 60) { _, _, _, _ throws(TokenFailure) in
            throw .malformed(.keySet(.malformed(.notJSONObject(.keySet))))
        }
        #expect(unsure.step == .failed)
        #expect(text(try created.secret(TokenChain.refreshTokenRecord)) == "rt-next", "the rotated token is kept")
        let other = try TokenChain.refresh(created, client: Rotating(), offlineGrace: 60) { _, _, _, _ throws(TokenFailure) in .otherAccount }
        #expect(other.step == .signInRequired)
        #expect(throws: FingersealError.self) { _ = try other.tokens() }
        #expect(try Vault.status(vault.store)?.signIn == .required)
        #expect(try created.secret(TokenChain.refreshTokenRecord) == nil)
    }
}
