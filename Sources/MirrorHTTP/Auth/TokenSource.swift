import Crypto
import Foundation
import Metrics
import MirrorJSON
package import MirrorModel
import Synchronization

/// Why a credential could not be had: said in the words of the auth definition, never
/// with a secret in them. `transient`: asking again may help (a network error, a 5xx).
package struct AuthFailure: Error, Sendable {
    package let reason: String
    package let transient: Bool
    package let status: Int?
    /// What a token endpoint said when it refused the grant (`invalid_grant`), masked.
    package var grantRefused: String? = nil
}

/// Where the tokens of one definition come from: a token endpoint (OAuth 2 grants, a JWT
/// exchange), a login, or a JWT signed here. The refresh token it started from, or the
/// last one the server rotated it to, is kept here and in the token store.
package final class TokenSource: Sendable {
    package let spec: AuthSpec
    private let refreshToken: Mutex<String?>
    /// Where `refreshToken` came from, for a message; nil: the job file.
    private let refreshTokenFrom: Mutex<String?> = Mutex(nil)
    private let store: TokenStore?
    private let signer: Mutex<JWTSigner?> = Mutex(nil)
    /// Fetches counted through swift-metrics by the definition's name (a job's own definition
    /// is named after the job) and outcome: `ok`, `failed`.
    private let fetched: Counter
    private let failed: Counter

    package init(spec: AuthSpec) {
        self.spec = spec
        fetched = Counter(label: "mirror_token_fetches_total", dimensions: [("auth", spec.name), ("outcome", "ok")])
        failed = Counter(label: "mirror_token_fetches_total", dimensions: [("auth", spec.name), ("outcome", "failed")])
        redactor = Redactor(secrets: spec.secrets, fetched: [spec.fetched])
        if case let .oauth2(oauth) = spec.kind {
            refreshToken = Mutex(oauth.refreshToken)
            store = oauth.tokenStore.map(TokenStore.init(path:))
        } else {
            refreshToken = Mutex(nil)
            store = nil
        }
    }

    /// Masks every secret of the definition, and the tokens fetched so far.
    private let redactor: Redactor

    /// Fetches (or signs) a new token.
    package func fetch(client: HTTPClient, timeout: Double, generation: Int) async throws -> Token {
        do {
            let token = try await fetchToken(client: client, timeout: timeout, generation: generation)
            fetched.increment()
            return token
        } catch {
            failed.increment()
            throw error
        }
    }

    private func fetchToken(client: HTTPClient, timeout: Double, generation: Int) async throws -> Token {
        let started = client.clock.now
        let answer: (token: String, lifetime: Double?)
        switch spec.kind {
        case let .oauth2(oauth):
            answer = try await fetchOAuth2(oauth, client: client, timeout: timeout)
        case let .jwt(jwt):
            answer = try await fetchJWT(jwt, client: client, timeout: timeout)
        case let .session(session):
            answer = try await login(session, client: client, timeout: timeout)
        case .bearer, .basic, .apiKey, .awsSigV4:
            throw AuthFailure(reason: "\(spec): nothing to fetch", transient: false, status: nil)
        }
        spec.fetched.add(answer.token)
        return Token(value: answer.token, lifetime: answer.lifetime, margin: spec.margin, now: started, generation: generation)
    }

    // MARK: OAuth 2

    private func fetchOAuth2(_ oauth: AuthSpec.OAuth2, client: HTTPClient, timeout: Double) async throws -> (String, Double?) {
        var form: [(String, String)] = [("grant_type", oauth.grant.rawValue)]
        if oauth.grant == .refreshToken {
            form.append(("refresh_token", try currentRefreshToken(oauth)))
            // The server revokes the token it rotates from as it answers: the new one must
            // have somewhere to go before the old one is spent.
            do throws(TokenStore.StoreFailure) {
                try store?.probe()
            } catch {
                throw AuthFailure(reason: "\(spec): \(error.reason), so the refresh token was not sent: it still works once "
                                      + "the token store can be written", transient: false, status: nil)
            }
        }
        if let scope = oauth.scope { form.append(("scope", scope)) }
        if let audience = oauth.audience { form.append(("audience", audience)) }
        // `params` may also set the grant's own fields (Zoom's `grant_type: account_credentials`).
        for parameter in oauth.parameters {
            if let index = form.firstIndex(where: { $0.0 == parameter.name }) {
                form[index].1 = parameter.value
            } else {
                form.append((parameter.name, parameter.value))
            }
        }
        var headers: [(String, String)] = []
        switch oauth.clientAuth {
        case .basic:
            // The same form the job's redactor masks (`AuthSpec.sentForms`).
            headers.append(("Authorization", "Basic " + AuthSpec.basicCredentials(
                oauth.clientID.addingPercentEncodingForQuery(), (oauth.clientSecret ?? "").addingPercentEncodingForQuery())))
        case .post:
            form.append(("client_id", oauth.clientID))
            if let secret = oauth.clientSecret { form.append(("client_secret", secret)) }
        }
        let document: JSONDocument
        do {
            document = try await post(to: oauth.tokenURL, form: form, headers: headers, what: "the token endpoint",
                                      client: client, timeout: timeout)
        } catch let failure as AuthFailure where oauth.grant == .refreshToken && failure.grantRefused != nil {
            let sent = refreshTokenFrom.withLock { $0 } ?? "the configured refresh_token"
            throw AuthFailure(reason: "\(spec): the token endpoint \(RedactedURL(real: oauth.tokenURL, redactor: redactor).shortDescription) "
                                  + "refused \(sent): \(failure.grantRefused ?? ""); a new refresh_token in the job file (or in the "
                                  + "environment variable it names) starts a new chain", transient: false, status: failure.status)
        }
        if let rotated = document.root["refresh_token"]?.stringValue, !rotated.isEmpty {
            try keep(rotated, oauth)
        }
        return try read(document, from: "the token endpoint " + RedactedURL(real: oauth.tokenURL, redactor: redactor).shortDescription)
    }

    /// The refresh token to send: the one the store kept from the last rotation, unless the
    /// job file names a newer one than the store's chain started from.
    private func currentRefreshToken(_ oauth: AuthSpec.OAuth2) throws -> String {
        if let token = refreshToken.withLock({ $0 }), token != oauth.refreshToken { return token }
        if let store {
            do throws(TokenStore.StoreFailure) {
                if let saved = try store.read(), saved.configured == Self.digest(oauth.refreshToken ?? "") {
                    spec.fetched.add(saved.refreshToken)
                    refreshToken.withLock { $0 = saved.refreshToken }
                    refreshTokenFrom.withLock { $0 = Self.stored(in: store, at: saved.savedAt) }
                    return saved.refreshToken
                }
            } catch {
                throw AuthFailure(reason: "\(spec): \(error.reason)", transient: false, status: nil)
            }
        }
        guard let token = oauth.refreshToken else {
            throw AuthFailure(reason: "\(spec): no refresh token", transient: false, status: nil)
        }
        return token
    }

    /// A refresh token the server rotated to: stored before its access token is used.
    private func keep(_ rotated: String, _ oauth: AuthSpec.OAuth2) throws {
        spec.fetched.add(rotated)
        let previous = refreshToken.withLock { token in
            defer { token = rotated }
            return token
        }
        guard rotated != previous else { return }
        guard let store else {
            refreshTokenFrom.withLock { $0 = "the refresh token the server rotated to in this run" }
            return
        }
        do throws(TokenStore.StoreFailure) {
            let savedAt = try store.write(TokenStore.Saved(refreshToken: rotated, configured: Self.digest(oauth.refreshToken ?? "")))
            refreshTokenFrom.withLock { $0 = Self.stored(in: store, at: savedAt) }
        } catch {
            throw AuthFailure(reason: "\(spec): the server rotated the refresh token and \(error.reason)", transient: false,
                              status: nil)
        }
    }

    /// `the stored refresh token (the token store '…', saved 2026-11-29T02:10:00.000Z)`.
    private static func stored(in store: TokenStore, at savedAt: String?) -> String {
        "the stored refresh token (the token store '\(store.path)', saved \(savedAt ?? "at a time it does not say"))"
    }

    private static func digest(_ text: String) -> String {
        Hex.string(SHA256.hash(data: Array(text.utf8)))
    }

    // MARK: JWT

    private func fetchJWT(_ jwt: AuthSpec.JWT, client: HTTPClient, timeout: Double) async throws -> (String, Double?) {
        let assertion = try sign(jwt)
        switch jwt.exchange {
        case .none:
            return (assertion, jwt.lifetime)
        case .assertion:
            let form = [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)]
            let document = try await post(to: jwt.tokenURL ?? "", form: form, headers: [], what: "the token endpoint",
                                          client: client, timeout: timeout)
            return try read(document, from: "the token endpoint " + RedactedURL(real: jwt.tokenURL ?? "", redactor: redactor).shortDescription)
        case .bearer:
            let document = try await post(to: jwt.tokenURL ?? "", form: nil, headers: [("Authorization", "Bearer " + assertion)],
                                          what: "the token endpoint", client: client, timeout: timeout)
            return try read(document, from: "the token endpoint " + RedactedURL(real: jwt.tokenURL ?? "", redactor: redactor).shortDescription)
        }
    }

    /// A new assertion: `iat` a minute back (for clocks a little ahead of ours), `exp`
    /// `lifetime` after now; `aud` is the token URL unless the definition names one.
    private func sign(_ jwt: AuthSpec.JWT) throws -> String {
        let signer = try signer.withLock { signer in
            if let signer { return signer }
            do {
                let made = try JWTSigner(algorithm: JWTSigner.Algorithm(rawValue: jwt.algorithm.rawValue) ?? .rs256,
                                         privateKeyPEM: jwt.privateKey, keyID: jwt.keyID)
                signer = made
                return made
            } catch {
                throw AuthFailure(reason: "\(spec): the private key cannot be used: \(error)", transient: false, status: nil)
            }
        }
        let now = Int(Date().timeIntervalSince1970)
        var members: [(String, String)] = []
        func string(_ name: String, _ value: String?) {
            if let value { members.append((name, JSONText.quoted(value))) }
        }
        string("iss", jwt.issuer)
        string("sub", jwt.subject)
        string("aud", jwt.audience ?? (jwt.exchange == .assertion ? jwt.tokenURL : nil))
        string("scope", jwt.scope)
        members.append(("iat", String(now - 60)))
        members.append(("exp", String(now + Int(jwt.lifetime))))
        for claim in jwt.claims {
            members.removeAll { $0.0 == claim.name }
            members.append((claim.name, claim.json))
        }
        let claims = "{" + members.map { JSONText.quoted($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
        return try signer.token(claims: Array(claims.utf8))
    }

    // MARK: Session

    private func login(_ session: AuthSpec.Session, client: HTTPClient, timeout: Double) async throws -> (String, Double?) {
        var headers = session.headers.map { Header(name: $0.name, value: RedactedText(real: $0.value, redactor: redactor)) }
        var body: [UInt8]?
        if let text = session.body {
            body = Array(text.utf8)
            if !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
                let json = (try? JSONDocument(parsing: Array(text.utf8))) != nil
                headers.append(Header(name: "Content-Type", value: RedactedText(
                    real: json ? "application/json" : "application/x-www-form-urlencoded", redactor: .none)))
            }
        }
        headers.append(Header(name: "Accept", value: RedactedText(real: "application/json", redactor: .none)))
        var request = HTTPRequest(method: session.method, url: RedactedURL(real: session.url, redactor: redactor), headers: headers,
                                  body: body, timeout: timeout, maxBytes: Self.maxAnswer, redactor: redactor)
        request.ownOriginOnly = true
        let document = try await answer(to: request, what: "the login", client: client)
        return try read(document, from: "the login " + request.url.shortDescription)
    }

    // MARK: Requests and answers

    /// The largest answer a token endpoint or a login may give.
    private static let maxAnswer = 1 << 20

    private func post(to url: String, form: [(String, String)]?, headers: [(String, String)], what: String,
                      client: HTTPClient, timeout: Double) async throws -> JSONDocument {
        var sent = headers.map { Header(name: $0.0, value: RedactedText(real: $0.1, redactor: redactor)) }
        sent.append(Header(name: "Accept", value: RedactedText(real: "application/json", redactor: .none)))
        var body: [UInt8]?
        if let form {
            sent.append(Header(name: "Content-Type", value: RedactedText(real: "application/x-www-form-urlencoded", redactor: .none)))
            body = Array(form.map { $0.0.addingPercentEncodingForQuery() + "=" + $0.1.addingPercentEncodingForQuery() }
                .joined(separator: "&").utf8)
        }
        var request = HTTPRequest(method: "POST", url: RedactedURL(real: url, redactor: redactor), headers: sent, body: body,
                                  timeout: timeout, maxBytes: Self.maxAnswer, redactor: redactor)
        request.ownOriginOnly = true
        return try await answer(to: request, what: what, client: client)
    }

    /// Sends a token request and reads its JSON answer; a refusal is said with the
    /// OAuth 2 `error` and `error_description` the server gave, masked.
    private func answer(to request: HTTPRequest, what: String, client: HTTPClient) async throws -> JSONDocument {
        let response: HTTPResponse
        do {
            response = try await client.send(request)
        } catch {
            throw AuthFailure(reason: "\(spec): \(what) \(request.url.shortDescription): \(error.reason)",
                              transient: error.kind == .transient, status: nil)
        }
        let document = try? JSONDocument(parsing: response.body)
        guard (200..<300).contains(response.status) else {
            var said = ""
            if let error = document?.root["error"] {
                said = ": " + (error.stringValue ?? error["message"]?.stringValue ?? error.rawText)
                if let description = document?.root["error_description"]?.stringValue { said += " (\(description))" }
            } else if let message = document?.root["message"]?.stringValue {
                said = ": " + message
            }
            let transient = RetryPolicy.isRetryable(status: response.status)
            let refused = document?.root["error"]?.stringValue == "invalid_grant"
            throw AuthFailure(reason: "\(spec): \(what) \(request.url.shortDescription) answered HTTP \(response.status)"
                                  + redactor.redact(said).cutForMessage(limit: 200),
                              transient: transient, status: response.status,
                              grantRefused: refused ? redactor.redact(String(said.dropFirst(2))).cutForMessage(limit: 200) : nil)
        }
        guard let document else {
            throw AuthFailure(reason: "\(spec): \(what) \(request.url.shortDescription) answered HTTP \(response.status) with a body that is not JSON",
                              transient: false, status: response.status)
        }
        return document
    }

    /// The token at `token_path` and its life: `expires_in` seconds, or until `expires_at`
    /// (ISO 8601 or seconds since 1970), or the definition's `lifetime`. A value that is not
    /// a number (`"soon"`, NaN) is not read; `Token` bounds the others. A token no header,
    /// query or cookie can carry (a control character in it) is refused here, as it arrives.
    private func read(_ document: JSONDocument, from what: String) throws -> (String, Double?) {
        guard let token = document.root.value(at: spec.answer.token)?.stringValue, !token.isEmpty else {
            throw AuthFailure(reason: "\(spec): \(what) answered no token at '\(spec.answer.token)'", transient: false,
                              status: nil)
        }
        guard !token.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw AuthFailure(reason: "\(spec): \(what) answered a token holding a control character (such as CR, LF or NUL), "
                                  + "which no request can carry; it is not used", transient: false, status: nil)
        }
        var lifetime = spec.answer.lifetime
        if let path = spec.answer.expiresIn, let value = document.root.value(at: path)?.scalarText,
           let seconds = Double(value), !seconds.isNaN {
            lifetime = seconds
        } else if let path = spec.answer.expiresAt, let value = document.root.value(at: path)?.scalarText {
            if let epoch = Double(value), !epoch.isNaN {
                lifetime = epoch - Date().timeIntervalSince1970
            } else if let date = Timestamp.date(value) {
                lifetime = date.timeIntervalSinceNow
            }
        }
        return (token, lifetime.map { max(0, $0) })
    }
}
