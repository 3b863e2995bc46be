import CurlKit
import FingersealCore
import FingersealWire
import FoundationEssentials
import Glibc
import IdentityClient
import JOSEKit
import LoopbackKit
import QRKit
import SodiumKit
import SystemKit

/// login: the device grant, the password grant, or the browser (authorization code + PKCE
/// with a loopback redirect). Every request to the identity provider is the broker's; the
/// client shows what the person must see and relays what they type. The refresh token never
/// leaves the broker.
enum LoginCommand {
    static func login(_ call: Call) throws -> Reply {
        try loggingFailure(.signIn, call.store) { try run(call) }
    }

    static func run(_ call: Call) throws -> Reply {
        let signIn = try resolve(call)
        let (issuer, clientID, scope, flow) = (signIn.issuer, signIn.clientID, signIn.scope, signIn.flow.rawValue)
        let store = call.store
        let options = call.settings
        // A new vault needs the account password (root: not), asked before anyone signs in
        // at the provider for nothing.
        if try Vault.status(store) == nil { try AccountPassword.requireUnlessRoot(call) }
        let http = HTTPClient(options: options)
        var client: OAuthClient
        let tokens: TokenSet
        var nonce: String? = nil
        var proofKeyMaterial: ProofKeyMaterial? = nil
        do {
            client = OAuthClient(metadata: try Discovery.discover(issuer: issuer, http: http), clientID: clientID,
                                 clientSecret: signIn.secret, http: http)
            proofKeyMaterial = try SignInBinding.bind(&client, options, tpm: store.tpm)
            if flow == "password" {
                tokens = try passwordFlow(client, scope: scope, call)
            } else if flow == "browser" {
                (tokens, nonce) = try browserFlow(client, scope: scope, call)
            } else {
                tokens = try deviceFlow(client, scope: scope, call)
            }
        } catch let failure as TokenFailure {
            throw loginError(failure)
        }
        guard let refreshToken = tokens.refreshToken else { throw FingersealError(.unavailable, Messages.noRefreshToken) }
        let proofKey = try SignInBinding.sealed(proofKeyMaterial, client, tokens, options)
        let identity = try establishIdentity(call, client: client, tokens: tokens, nonce: nonce)

        // Seal it: into the existing vault (its PIN), or a new one (a new PIN).
        let vault: UnlockedVault
        if try Vault.status(store) != nil {
            vault = try PINEntry.unlock(call, store: store)
        } else {
            vault = try Vault.create(store, pin: call.pinKeyslot(try PINEntry.askNew(call)))
        }
        try vault.update {
            try $0.signedIn(refreshToken: refreshToken, provider: client.providerRecord(proofKey: proofKey?.holder),
                            clientSecret: signIn.secret, proofKey: proofKey?.bytes, identity: identity, at: SystemClock().now())
        }
        try LockoutLedger(store: store, options: options).clearAll()
        // The issuer as sealed (the provider's own spelling, once normalized by discovery), not
        // as typed: shown, audited and stored alike.
        let signedInTo = client.providerRecord.issuer
        AuditTrail(store: store).record(.signIn(issuer: signedInTo, flow: flow), vault: vault)
        call.conversation.output(Messages.signedIn(signedInTo))
        if let identity { call.conversation.output(Messages.signedInAs(identity.display)) }
        if try call.state.reader.enrolledFingers(call, vault: vault).isEmpty { call.conversation.info(Messages.offerEnroll) }
        return Reply(.success)
    }

    /// Who signed in: the verified ID token, else userinfo (issue 12 §2). With `user_claim`,
    /// the account must be this Linux account's: otherwise the sign-in is refused with a
    /// sentence naming both, nothing is stored, the tokens are revoked (best effort), and
    /// the refusal is audited. An answer that cannot be verified (bad signature, wrong
    /// audience, expired, wrong nonce, unknown key) refuses the sign-in whatever the policy.
    static func establishIdentity(_ call: Call, client: OAuthClient, tokens: TokenSet, nonce: String?) throws -> SignedInIdentity? {
        func refuse(_ error: FingersealError) -> FingersealError {
            if let refreshToken = tokens.refreshToken { _ = try? client.revoke(refreshToken) }
            let trail = AuditTrail(store: call.store)
            let event = AuditEvent.failure(action: .signIn, reason: .refusal(.identityMismatch))
            if (try? Vault.status(call.store)) != nil { trail.record(event, vault: nil) } else { trail.log(event) }
            return error
        }
        let claims: IDTokenClaims?
        do throws(TokenFailure) {
            claims = try IdentityVerification.verifiedIdentity(tokens: tokens, metadata: client.metadata, clientID: client.clientID,
                                                        nonce: nonce, http: client.http, cache: call.state.jwks,
                                                        now: SystemClock().now(), binding: client.binding)
        } catch {
            throw refuse(loginError(error))
        }
        let identity = claims.map(SignedInIdentity.init)
        guard call.settings.userClaim != nil else { return identity }
        guard let identity else { throw refuse(FingersealError(.notPermitted, Messages.identityUnknown)) }
        if case let .refused(sentence) = try IdentityBinding.check(identity, user: call.account.name, options: call.settings) {
            throw refuse(FingersealError(.notPermitted, sentence))
        }
        return identity
    }

    /// A confidential client's secret, asked through the client (which reads it from its
    /// --client-secret-file): the broker never opens a file a caller names.
    static func askClientSecret(_ call: Call) throws -> SecureBytes {
        guard let answer = try call.conversation.askSecret(.clientSecret, Messages.clientSecretPrompt) else {
            throw FingersealError(.usage, Messages.noClientSecret)
        }
        return try answer.withUnsafeBytes { bytes in
            // A trailing newline is the editor's, not the secret's.
            var end = bytes.endIndex
            while end > bytes.startIndex, [0x0a, 0x0d, 0x20].contains(bytes[end - 1]) { end -= 1 }
            return try SecureBytes(copying: bytes[..<end])
        }
    }

    static func passwordFlow(_ client: OAuthClient, scope: String, _ call: Call) throws -> TokenSet {
        // --idp-user: the name at the identity provider (default: the account acted on).
        let user = call.options(for: LoginOptions.self).idpUser ?? call.account.name
        guard let password = try call.conversation.askSecret(.idpPassword, Messages.passwordPrompt(user)) else {
            throw FingersealError(.usage, Messages.passwordEmptyInput)
        }
        return try client.passwordGrant(username: user, password: password, scope: scope)
    }

    /// RFC 8628: show the code (and a QR code), poll at the interval, slow down when asked,
    /// stop on expiry, refusal, or the client's cancel or hang-up.
    static func deviceFlow(_ client: OAuthClient, scope: String, _ call: Call) throws -> TokenSet {
        let authorization = try client.startDeviceAuthorization(scope: scope)
        let conversation = call.conversation
        if call.json {
            struct Prompt: Encodable {
                let verificationUri: String, verificationUriComplete: String?, userCode: String, expiresIn: Int
            }
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let line = try encoder.encode(Prompt(verificationUri: authorization.verificationURI,
                                                 verificationUriComplete: authorization.verificationURIComplete,
                                                 userCode: authorization.userCode, expiresIn: authorization.expiresIn))
            conversation.output(String(decoding: line, as: UTF8.self))
        } else {
            conversation.output(Messages.openAndEnter(authorization.verificationURI, authorization.userCode))
            if !call.options(for: LoginOptions.self).noQR, let target = authorization.verificationURIComplete,
               let code = try? QRCode(text: target) {
                conversation.output(Messages.orScanQR)
                conversation.output(code.renderHalfBlocks())
            }
        }
        conversation.info(Messages.waitingForSignIn)
        return try awaitApproval(client, authorization, conversation)
    }

    /// Polls for the device code's approval at the provider's interval (slower when asked),
    /// until the code expires or `limit` seconds pass; the client's cancel or hang-up throws
    /// `.cancelled`. With `keepAlive`, each poll tells the client the broker is still there
    /// (an event a PAM module ignores, which keeps its bound on the broker's silence).
    static func awaitApproval(_ client: OAuthClient, _ authorization: DeviceAuthorization, _ conversation: Conversation,
                              limit: Double? = nil, keepAlive: Bool = false) throws -> TokenSet {
        var authorization = authorization
        let deadline = monotonicSeconds() + min(Double(authorization.expiresIn), limit ?? .infinity)
        while monotonicSeconds() < deadline {
            // The interval, in pieces of at most 10 s with keepAlive (a provider may ask for a
            // longer one than the module's bound on silence).
            let next = min(monotonicSeconds() + Double(authorization.interval), deadline)
            repeat {
                if keepAlive { conversation.send(.event(.waitingForSignIn)) }
                _ = try pause(conversation, seconds: min(keepAlive ? 10 : .infinity, max(next - monotonicSeconds(), 0)))
            } while monotonicSeconds() < next
            do throws(TokenFailure) {
                return try client.pollDevice(authorization)
            } catch {
                switch error {
                case .authorizationPending: continue
                case .slowDown: authorization.interval += 5
                default: throw loginError(error)
                }
            }
        }
        throw FingersealError(.timedOut, Messages.codeExpired)
    }

    /// Waits `seconds`, or until `other` is readable (then true). The client's cancel or
    /// hang-up throws `.cancelled`.
    static func pause(_ call: Call, seconds: Double, until other: Int32? = nil) throws -> Bool {
        try pause(call.conversation, seconds: seconds, until: other)
    }

    static func pause(_ conversation: Conversation, seconds: Double, until other: Int32? = nil) throws -> Bool {
        let deadline = monotonicSeconds() + seconds
        while true {
            var fds = [pollEntry(conversation.cancelFD)]
            if let other { fds.append(pollEntry(other)) }
            switch waitReady(&fds, until: deadline) {
            case .timedOut: return false
            case .failed: continue
            case .ready: break
            }
            if fds.count > 1 && fds[1].revents != 0 { return true }
            if fds[0].revents != 0 && conversation.takeCancel() { throw FingersealError(.cancelled, Messages.cancelled) }
        }
    }

    static func loginError(_ failure: TokenFailure) -> FingersealError {
        switch failure {
        case .chainEnded, .credentialsRefused: return FingersealError(.noMatch, Messages.credentialsRefused)
        case .accessDenied: return FingersealError(.noMatch, Messages.signInRefused)
        case .expiredToken: return FingersealError(.timedOut, Messages.codeExpired)
        case let .unreachable(why): return FingersealError(.unavailable, Messages.providerUnreachable(Messages.reason(why)))
        case let .badConfiguration(why): return FingersealError(.badConfiguration, Messages.providerProblem(Messages.reason(why)))
        case let .malformed(why): return FingersealError(.unavailable, Messages.providerProblem(Messages.reason(why)))
        case let .identityRejected(why): return FingersealError(.unavailable, Messages.providerProblem(Messages.reason(why)))
        case let .rejected(status, code):
            return FingersealError(.unavailable, Messages.providerAnswered(status, code))
        case .proofRefused:
            return FingersealError(.unavailable, Messages.providerProblem(Messages.reason(failure)))
        case .authorizationPending, .slowDown, .clientAuthenticationRequired:
            return FingersealError(.unavailable, Messages.providerUnexpectedAnswer)
        }
    }

    // MARK: browser

    static var browserPages: RedirectReceiver.Pages {
        RedirectReceiver.Pages(received: Messages.browserPageReceived, failed: Messages.browserPageFailed,
                               ignored: Messages.browserPageIgnored, otherAccount: Messages.browserPageOtherAccount,
                               unknownAccount: Messages.browserPageUnknownAccount)
    }

    /// RFC 8252: authorization code with PKCE in a browser, which comes back to a
    /// one-request listener on 127.0.0.1 run by the broker; bounded by --timeout, ended by
    /// the client's cancel. The listener answers only processes of the caller's uid (the
    /// person signing in, from the socket): another account's redirect, even with the right
    /// state, changes nothing. The client opens the browser (`browse`), as the user, with the
    /// listener's start address, which holds no secret: the authorization URL's state, nonce
    /// and challenge stay out of every command line. Returns the tokens and the nonce the ID
    /// token must carry.
    static func browserFlow(_ client: OAuthClient, scope: String, _ call: Call) throws -> (TokenSet, String) {
        // Both in range (`LoginOptions`, the configuration's redirect_port).
        let given = call.options(for: LoginOptions.self)
        let seconds = given.timeout ?? 300
        let port = given.redirectPort ?? call.settings.redirectPort ?? 0
        let request = try AuthorizationRequest()
        let receiver: RedirectReceiver
        do {
            receiver = try RedirectReceiver(port: UInt16(port), state: request.state, owner: call.caller.uid, pages: browserPages)
        } catch let error as SystemError where error.code == EADDRINUSE {
            throw FingersealError(.unavailable, Messages.redirectPortBusy(port))
        } catch {
            throw FingersealError(.systemError, Messages.systemFailure(.listenForBrowser),
                                  detail: "\(error)")
        }
        defer { receiver.stop() }
        let url = try client.authorizationURL(request, scope: scope, redirectURI: receiver.redirectURI)
        try receiver.startRedirecting(to: url)
        try showAuthorizationURL(url, start: receiver.startURI, json: call.json, call)
        if !given.noBrowser { call.conversation.browse(receiver.startURI) }
        call.conversation.info(Messages.waitingForSignIn)
        let redirect = try waitForRedirect(receiver, call, seconds: seconds)
        receiver.stop()

        let response = AuthorizationResponse(redirect.parameters, code: redirect.code)
        switch response {
        case let .code(code):
            // The code and the verifier go from secure memory into the request's body.
            do throws(TokenFailure) {
                return (try client.exchangeCode(code, redirectURI: receiver.redirectURI, verifier: request.pkce.verifier),
                        request.nonce)
            } catch {
                // invalid_grant here: the code expired, was used, or the verifier did not match.
                if case .chainEnded = error { throw FingersealError(.noMatch, Messages.codeNotAccepted) }
                throw error
            }
        case .refused:
            throw loginError(.accessDenied)
        case let .failed(error):
            throw FingersealError(response.isTransient ? .unavailable : .badConfiguration,
                                  Messages.providerEndedSignIn(error))
        case .malformed:
            throw FingersealError(.unavailable, Messages.providerSentNothingBack)
        }
    }

    /// The whole address goes to the person's terminal (it is theirs to read); with --json also
    /// the start address, which a script may hand to a browser without exposing the rest.
    static func showAuthorizationURL(_ url: String, start: String, json: Bool, _ call: Call) throws {
        guard json else {
            call.conversation.output(Messages.openInBrowser)
            call.conversation.output(url)
            return
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        call.conversation.output(String(decoding: try encoder.encode(["authorization_url": url, "start_url": start]), as: UTF8.self))
    }

    /// The redirect once its page has been sent; every wait is bounded. Another account
    /// turned away is told to the person (once per account) and logged: someone on this
    /// computer tried to slip their sign-in into this one.
    static func waitForRedirect(_ receiver: RedirectReceiver, _ call: Call, seconds: Int) throws -> RedirectReceiver.Redirect {
        let deadline = monotonicSeconds() + Double(seconds)
        while true {
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0 else { throw FingersealError(.timedOut, Messages.browserTimedOut) }
            guard try pause(call, seconds: min(remaining, 60), until: receiver.readyFD) else { continue }
            if let redirect = receiver.redirect() { return redirect }
            for stranger in receiver.takeStrangers() {
                switch stranger {
                case let .account(uid):
                    let account = try? UserAccount.withID(uid)
                    let name = account?.name ?? "uid \(uid)"
                    call.conversation.info(Messages.browserOtherAccountRefused(name))
                case .unknown:
                    call.conversation.info(Messages.browserUnknownAccountRefused)
                }
                AuditTrail(store: call.store).log(.failure(action: .signIn, reason: .refusal(.redirectFromOtherAccount)))
            }
        }
    }
}
