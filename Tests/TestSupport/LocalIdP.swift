import CurlKit
import FoundationEssentials
import Glibc
import FingersealCore
import IdentityClient
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

    func client(_ id: String = "fingerseal-test", secret: String? = nil, timeout: Double = 10) throws -> OAuthClient {
        let http = HTTPClient(configuration: .init(connectTimeout: 2, timeout: timeout))
        return OAuthClient(metadata: try Discovery.discover(issuer: issuer, http: http), clientID: id,
                           clientSecret: try secret.map { try SecureBytes(copying: Array($0.utf8)) }, http: http)
    }

    /// fingerseal-confidential's secret, as the IdP wrote it at start.
    func confidentialSecret() throws -> String {
        guard let secret = readFile(temp.file("idp/client-secret")) else { throw TestFailure("the IdP wrote no client secret") }
        return String(decoding: secret, as: UTF8.self)
    }

    // MARK: other providers' behaviours (POST /test/switch, Tests/IdP/README.md)

    /// Sets one switch; they combine, and stay until changed (or this IdP stops).
    func setSwitch(_ name: String, _ value: String, grantType: String = "any") throws {
        try hook("/test/switch", [("name", name), ("value", value), ("grant_type", grantType)])
    }

    /// A parameter sent twice (in the form, the query or both) gets 400 invalid_request.
    func refuseDuplicateParameters(_ refuse: Bool = true) throws {
        try setSwitch("duplicate-parameters", refuse ? "refuse" : "accept")
    }

    /// The token endpoint's error answers get `status` (400, 401 or 403) and an empty body,
    /// for `grantType` ("password", "refresh_token", ...) or all; nil: DOT's own answers.
    func emptyErrors(_ status: Int?, grantType: String = "any") throws {
        try setSwitch("empty-errors", status.map(String.init) ?? "off", grantType: grantType)
    }

    /// A revocation without client authentication (any public client's) gets 401, empty body.
    func revokeOnlyForConfidentialClients(_ only: Bool = true) throws {
        try setSwitch("revocation", only ? "confidential-only" : "any-client")
    }

    /// The code clients' redirect URI is exactly http://127.0.0.1:PORT/callback (nil: any
    /// loopback port, RFC 8252 §7.3, as DOT does).
    func exactRedirectPort(_ port: Int?) throws {
        try setSwitch("exact-redirect-port", port.map(String.init) ?? "off")
    }

    /// ID tokens signed with "RS256" (DOT's, the default) or "ES256"; the JWKS has both keys.
    func signIDTokens(_ algorithm: String) throws {
        try setSwitch("id-token-alg", algorithm)
    }

    /// The ID token's and userinfo's preferred_username, email and name become `user`'s,
    /// whoever signed in (nil: the signed-in user's). `sub` stays the signed-in user's.
    func claimIdentity(of user: String?) throws {
        try setSwitch("claims-user", user ?? "off")
    }

    /// The ID token's auth_time: "login" (DOT's: the user's last login, which approving a
    /// device code makes now), "old" (an hour ago) or "absent".
    func authTime(_ value: String) throws {
        try setSwitch("auth-time", value)
    }

    /// Every device authorization request's parameters so far, oldest first (name: values).
    func deviceAuthorizations() throws -> [[String: [String]]] {
        struct Answer: Decodable { let requests: [[String: [String]]] }
        let body = try http.send(.get(origin + "/test/device-authorizations")).body
        return try JSONDecoder().decode(Answer.self, from: Data(body)).requests
    }

    /// What the IdP's RFC 9449 layer bound and refused (GET /test/dpop, Tests/IdP/idp/dpop.py).
    struct DPoPReport: Decodable {
        let proofs: Int
        let bound: Int
        /// Refusals by reason, in the IdP's words.
        let refused: [String: Int]
    }

    /// GET `url` (a resource: userinfo) with `token` as `scheme`, and `proof` in the DPoP header.
    static func getResource(_ url: String, token: String, scheme: String = "DPoP", proof: String?) throws -> HTTPResponse {
        var headers = [(name: "Authorization", value: "\(scheme) \(token)")]
        if let proof { headers.append((name: "DPoP", value: proof)) }
        return try HTTPClient(configuration: .init(connectTimeout: 2, timeout: 10)).send(.get(url, headers: headers))
    }

    func dpopReport() throws -> DPoPReport {
        try JSONDecoder().decode(DPoPReport.self, from: Data(try http.send(.get(origin + "/test/dpop")).body))
    }

    /// A raw form POST to `path` (no client of ours): status and body.
    func post(_ path: String, _ fields: [(name: String, value: String)],
              headers: [(name: String, value: String)] = []) throws -> (status: Int, body: String) {
        let response = try http.send(.postForm(origin + path, fields: fields, headers: headers))
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    /// An ID token for `user` of `client` (a public one): a password grant, then a refresh,
    /// which is where DOT issues one. The token's three parts as text.
    func idToken(_ user: String = "alice", password: String = "wonderland-7",
                 client: String = "fingerseal-password") throws -> (header: String, payload: String, accessToken: String) {
        struct Answer: Decodable { let access_token: String; let refresh_token: String?; let id_token: String? }
        let first = try post("/o/token/", [("grant_type", "password"), ("username", user), ("password", password),
                                           ("client_id", client), ("scope", "openid offline_access")])
        let signedIn = try JSONDecoder().decode(Answer.self, from: Data(first.body.utf8))
        guard let refresh = signedIn.refresh_token else { throw TestFailure("no refresh token: \(first.body)") }
        let second = try post("/o/token/", [("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", client)])
        let refreshed = try JSONDecoder().decode(Answer.self, from: Data(second.body.utf8))
        guard let idToken = refreshed.id_token else { throw TestFailure("no ID token: \(second.body)") }
        let parts = idToken.split(separator: ".").map(String.init)
        guard parts.count == 3, let header = LocalIdP.base64URLDecoded(parts[0]), let payload = LocalIdP.base64URLDecoded(parts[1])
        else { throw TestFailure("not a JWS: \(second.body)") }
        return (header, payload, refreshed.access_token)
    }

    static func base64URLDecoded(_ text: String) -> String? {
        var standard = text.replacing("-", with: "+").replacing("_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map { String(decoding: $0, as: UTF8.self) }
    }
}

extension LocalIdP {
    /// The password sign-in as alice at the provider (`--idp-user`; `--user` names a local
    /// account), the provider's password and the new PIN from descriptor 3.
    static func passwordLogin(_ idp: LocalIdP, _ home: CLIHome, pin: String = "2580",
                              client: String = "fingerseal-test") throws -> Child.Result {
        try home.run(passwordLoginArguments(idp, client: client), fd3: passwordLoginAnswers(pin: pin))
    }

    /// That sign-in's command line, and what it reads from descriptor 3.
    static func passwordLoginArguments(_ idp: LocalIdP, client: String = "fingerseal-test") -> [String] {
        ["login", "--issuer", idp.issuer, "--client-id", client, "--flow", "password",
         "--idp-user", "alice", "--password-fd", "3", "--pin-fd", "3"]
    }
    static func passwordLoginAnswers(pin: String) -> String { "wonderland-7\n\(pin)\n" }
}
