import Foundation
package import MirrorJSON

/// `auth`: how a job's requests say who sends them. A definition is named at the top of a
/// job file and shared by every job that names it (one token for all of them), or written
/// inside one job. Every value that came from `${…}` is also in the job's `Redactor`.
/// Printed, dumped or reflected, it shows its name and kind only.
package struct AuthSpec: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Where a token or key goes on a request.
    package enum Placement: Sendable, Equatable {
        /// `name: prefix + value`; `Authorization: Bearer …` by default. `Bearer ` goes before a
        /// token in `Authorization` only: another header takes the token alone unless `prefix` says otherwise.
        case header(name: String, prefix: String)
        /// A query parameter added to every request, never shown in a stored URL.
        case query(name: String)
        /// A cookie `name=value`.
        case cookie(name: String)

        package static let bearer = Placement.header(name: "Authorization", prefix: "Bearer ")
    }

    /// How an OAuth 2 client proves itself to the token endpoint (RFC 6749 2.3.1).
    package enum ClientAuth: String, Sendable, CaseIterable {
        /// HTTP Basic with the client id and secret.
        case basic = "client_secret_basic"
        /// `client_id` and `client_secret` in the form body.
        case post = "client_secret_post"
    }

    package enum Grant: String, Sendable, CaseIterable {
        case clientCredentials = "client_credentials"
        case refreshToken = "refresh_token"
    }

    /// Where fetched tokens are read from a token endpoint's (or a login's) JSON answer.
    package struct TokenAnswer: Sendable {
        package var token: JSONPath
        /// The token's lifetime in seconds (`expires_in`), or the instant it ends
        /// (`expires_at`: ISO 8601 or seconds since 1970); neither: `lifetime`.
        package var expiresIn: JSONPath?
        package var expiresAt: JSONPath?
        /// Seconds a token lives when the answer does not say; nil: until refused.
        package var lifetime: Double?

        package init(token: JSONPath, expiresIn: JSONPath? = JSONPath("expires_in"), expiresAt: JSONPath? = JSONPath("expires_at"),
                     lifetime: Double? = nil) {
            self.token = token
            self.expiresIn = expiresIn
            self.expiresAt = expiresAt
            self.lifetime = lifetime
        }
    }

    package struct OAuth2: Sendable {
        package var grant: Grant
        package var tokenURL: String
        package var clientID: String
        package var clientSecret: String?
        package var clientAuth: ClientAuth
        package var scope: String?
        package var audience: String?
        /// Extra form parameters of every token request.
        package var parameters: [(name: String, value: String)]
        /// The configured refresh token (`refresh_token` grant); a stored rotated one wins.
        package var refreshToken: String?
        /// The file rotated refresh tokens are written to, outside the output folder.
        package var tokenStore: String?

        package init(grant: Grant, tokenURL: String, clientID: String, clientSecret: String?, clientAuth: ClientAuth,
                     scope: String?, audience: String?, parameters: [(name: String, value: String)], refreshToken: String?,
                     tokenStore: String?) {
            self.grant = grant
            self.tokenURL = tokenURL
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.clientAuth = clientAuth
            self.scope = scope
            self.audience = audience
            self.parameters = parameters
            self.refreshToken = refreshToken
            self.tokenStore = tokenStore
        }
    }

    package enum JWTAlgorithm: String, Sendable, CaseIterable {
        case rs256 = "RS256"
        case es256 = "ES256"
    }

    /// A signed assertion: used as the bearer itself, or exchanged for a token.
    package struct JWT: Sendable {
        package enum Exchange: String, Sendable, CaseIterable {
            /// The assertion is the bearer token (no token endpoint).
            case none
            /// RFC 7523: `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=…`
            /// posted to the token URL (Google service accounts).
            case assertion
            /// A POST to the token URL with the assertion as its bearer (GitHub Apps'
            /// installation tokens).
            case bearer
        }

        package var algorithm: JWTAlgorithm
        /// PEM text.
        package var privateKey: String
        package var keyID: String?
        package var issuer: String?
        package var subject: String?
        package var audience: String?
        package var scope: String?
        /// Seconds from `iat` to `exp`.
        package var lifetime: Double
        /// Further claims, as JSON member text (`"name":value`) in file order.
        package var claims: [(name: String, json: String)]
        package var exchange: Exchange
        package var tokenURL: String?

        package init(algorithm: JWTAlgorithm, privateKey: String, keyID: String?, issuer: String?, subject: String?,
                     audience: String?, scope: String?, lifetime: Double, claims: [(name: String, json: String)],
                     exchange: Exchange, tokenURL: String?) {
            self.algorithm = algorithm
            self.privateKey = privateKey
            self.keyID = keyID
            self.issuer = issuer
            self.subject = subject
            self.audience = audience
            self.scope = scope
            self.lifetime = lifetime
            self.claims = claims
            self.exchange = exchange
            self.tokenURL = tokenURL
        }
    }

    /// A login request whose answer holds the token.
    package struct Session: Sendable {
        package var url: String
        package var method: String
        /// JSON or form text, as the job's own `body`.
        package var body: String?
        package var headers: [(name: String, value: String)]

        package init(url: String, method: String, body: String?, headers: [(name: String, value: String)]) {
            self.url = url
            self.method = method
            self.body = body
            self.headers = headers
        }
    }

    package struct SigV4: Sendable {
        package var accessKey: String
        package var secretKey: String
        package var sessionToken: String?
        package var region: String
        package var service: String

        package init(accessKey: String, secretKey: String, sessionToken: String?, region: String, service: String) {
            self.accessKey = accessKey
            self.secretKey = secretKey
            self.sessionToken = sessionToken
            self.region = region
            self.service = service
        }
    }

    package enum Kind: Sendable {
        case bearer(token: String)
        case basic(username: String, password: String)
        case apiKey(value: String)
        case oauth2(OAuth2)
        case jwt(JWT)
        case session(Session)
        case awsSigV4(SigV4)

        /// The word of `type:`.
        package var word: String {
            switch self {
            case .bearer: "bearer"
            case .basic: "basic"
            case .apiKey: "api_key"
            case .oauth2: "oauth2"
            case .jwt: "jwt"
            case .session: "session"
            case .awsSigV4: "aws_sigv4"
            }
        }
    }

    /// The definition's name; a job's own definition is named after the job.
    package let name: String
    /// Tells definitions of different files apart: jobs share a token when theirs are equal.
    package let key: String
    package let kind: Kind
    /// Where the token (or key) goes; unused by `basic` and `aws_sigv4`.
    package let placement: Placement
    /// How fetched tokens are read from their answers.
    package let answer: TokenAnswer
    /// Seconds before a token's end at which it is fetched anew.
    package let margin: Double
    /// The values of the definition that came from `${…}` (or from a key file).
    private let given: [Redactor.Secret]
    /// The tokens fetched for it: masked by every job that uses it.
    package let fetched = FetchedSecrets()

    package init(name: String, key: String, kind: Kind, placement: Placement = .bearer,
                 answer: TokenAnswer = TokenAnswer(token: JSONPath("access_token")!), margin: Double = 60,
                 secrets: [Redactor.Secret] = []) {
        given = secrets
        self.name = name
        self.key = key
        self.kind = kind
        self.placement = placement
        self.answer = answer
        self.margin = margin
    }

    /// Whether its tokens are fetched (or, for a bare JWT, signed), and so made anew after a 401.
    package var fetchesTokens: Bool {
        switch kind {
        case .oauth2, .session, .jwt: true
        case .bearer, .basic, .apiKey, .awsSigV4: false
        }
    }

    /// The definition's secret values, named for messages: masked wherever its requests
    /// are talked about (the job's `Redactor` holds those that came from `${…}`).
    package var secrets: [Redactor.Secret] {
        given + kindSecrets + sentForms(of: given + kindSecrets)
    }

    /// The forms the definition's credentials take on the wire that hold none of `secrets`
    /// as text, each made of one of them: the base64 of Basic's `user:password`, and of
    /// `client_secret_basic`'s id and secret. An API that echoes one echoes the secret: it is
    /// masked wherever the secret is. (A token behind a `prefix`, in a cookie or in a query,
    /// and a session token in `X-Amz-Security-Token`, are sent as they are: masked already.)
    package func sentForms(of secrets: [Redactor.Secret]) -> [Redactor.Secret] {
        func madeOfSecret(_ parts: String?...) -> Bool {
            parts.contains { part in secrets.contains { !$0.value.isEmpty && part?.contains($0.value) == true } }
        }
        switch kind {
        case let .basic(username, password) where madeOfSecret(username, password):
            return [Redactor.Secret(name: "\(name) basic credentials", value: Self.basicCredentials(username, password))]
        case let .oauth2(oauth) where oauth.clientAuth == .basic && madeOfSecret(oauth.clientID, oauth.clientSecret):
            return [Redactor.Secret(name: "\(name) client credentials", value: Self.basicCredentials(
                oauth.clientID.addingPercentEncodingForQuery(), (oauth.clientSecret ?? "").addingPercentEncodingForQuery()))]
        default:
            return []
        }
    }

    /// What `Authorization: Basic` carries (RFC 7617): the base64 of `user:password`.
    package static func basicCredentials(_ user: String, _ password: String) -> String {
        Data("\(user):\(password)".utf8).base64EncodedString()
    }

    private var kindSecrets: [Redactor.Secret] {
        func named(_ what: String, _ value: String?) -> [Redactor.Secret] {
            value.map { [Redactor.Secret(name: "\(name) \(what)", value: $0)] } ?? []
        }
        switch kind {
        case let .bearer(token): return named("token", token)
        case let .basic(_, password): return named("password", password)
        case let .apiKey(value): return named("key", value)
        case let .oauth2(oauth): return named("client secret", oauth.clientSecret) + named("refresh token", oauth.refreshToken)
        case let .jwt(jwt): return named("private key", jwt.privateKey)
        case .session: return []
        case let .awsSigV4(sigv4): return named("secret key", sigv4.secretKey) + named("session token", sigv4.sessionToken)
        }
    }

    package var description: String { "auth '\(name)' (\(kind.word))" }
    package var debugDescription: String { description }
    package var customMirror: Mirror { Mirror(self, children: ["name": name, "type": kind.word]) }
}
