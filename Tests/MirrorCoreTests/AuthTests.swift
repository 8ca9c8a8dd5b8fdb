import Foundation
import GRDB
import InMemoryLogging
import Logging
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorJobFile
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

/// A token endpoint and the API it guards, in one fixture: client credentials and
/// rotating refresh tokens at `/token`, a JSON login at `/login`, and `/items?page=N`
/// (10 records a page, pages 1-40, then empty) answering only the newest token.
private final class TokenDesk: Sendable {
    struct State {
        var issued = 0
        var current: String?
        /// The refresh token the desk accepts next; each use rotates it.
        var refreshToken = "rt-0"
        var refreshTokensSeen: [String] = []
        var tokenRequests: [FixtureRequest] = []
        var logins = 0
        /// The current token stops working once this page has been served.
        var revokeAfterPage: Int?
        /// Every token is refused.
        var refuseAll = false
        var pagesServed = 0
        var unauthorized = 0
        /// The member saying the token's life, as JSON text; nil: `"expires_in":<expiresIn>`.
        var expires: String?
        /// The access token answered, as JSON string text; nil: `tok-<n>-Zq`.
        var answered: String?
    }

    let state: Mutex<State>
    let expiresIn: Int

    init(_ state: State = State(), expiresIn: Int = 3600) {
        self.state = Mutex(state)
        self.expiresIn = expiresIn
    }

    var tokenRequests: [FixtureRequest] { state.withLock { $0.tokenRequests } }

    func handle(_ request: FixtureRequest) -> FixtureResponse {
        switch request.path {
        case "/token": return token(request)
        case "/login": return login(request)
        default: return page(request)
        }
    }

    private func form(_ request: FixtureRequest) -> [String: String] {
        var form: [String: String] = [:]
        for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            form[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return form
    }

    private func token(_ request: FixtureRequest) -> FixtureResponse {
        let form = form(request)
        return state.withLock { state in
            state.tokenRequests.append(request)
            let basic = request.headers["authorization"] == "Basic " + Data("app-1:s3cret-Kx9".utf8).base64EncodedString()
            let posted = form["client_id"] == "app-1" && form["client_secret"] == "s3cret-Kx9"
            guard basic != posted else {
                let sent = form["client_secret"] ?? ""
                return .json(#"{"error":"invalid_client","error_description":"client secret \#(sent) not known"}"#, status: 401)
            }
            var rotated = ""
            switch form["grant_type"] {
            case "client_credentials": break
            case "refresh_token":
                state.refreshTokensSeen.append(form["refresh_token"] ?? "")
                guard form["refresh_token"] == state.refreshToken else {
                    return .json(#"{"error":"invalid_grant","error_description":"refresh token is not valid"}"#, status: 400)
                }
                state.refreshToken = "rt-\(state.refreshTokensSeen.count)"
                rotated = #","refresh_token":"\#(state.refreshToken)""#
            default:
                return .json(#"{"error":"unsupported_grant_type"}"#, status: 400)
            }
            state.issued += 1
            state.current = "tok-\(state.issued)-Zq"
            let expires = state.expires ?? #""expires_in":\#(expiresIn)"#
            let token = state.answered ?? state.current!
            return .json(#"{"access_token":"\#(token)","token_type":"Bearer",\#(expires)\#(rotated)}"#)
        }
    }

    private func login(_ request: FixtureRequest) -> FixtureResponse {
        state.withLock { state in
            guard String(decoding: request.body, as: UTF8.self) == #"{"user":"ada","password":"pw-Lm4"}"# else {
                return .json(#"{"message":"wrong password"}"#, status: 403)
            }
            state.logins += 1
            state.issued += 1
            state.current = "sess-\(state.issued)-Zq"
            return .json(#"{"data":{"token":"\#(state.current!)"}}"#)
        }
    }

    private func page(_ request: FixtureRequest) -> FixtureResponse {
        let page = Int(request.parameter("page") ?? "") ?? 0
        let presented = request.headers["authorization"].map { String($0.dropFirst("Bearer ".count)) }
            ?? request.headers["x-session"]
        return state.withLock { state in
            guard !state.refuseAll, let current = state.current, presented == current else {
                state.unauthorized += 1
                return .json(#"{"detail":"invalid token"}"#, status: 401)
            }
            state.pagesServed += 1
            if let revoke = state.revokeAfterPage, page >= revoke {
                state.current = "revoked"
                state.revokeAfterPage = nil
            }
            let records = page <= 40 ? (0..<10).map { #"{"id":"\#(page * 100 + $0)"}"# }.joined(separator: ",") : ""
            return .json(#"{"data":{"list":[\#(records)]}}"#)
        }
    }
}

private let environment = ["CLIENT_SECRET": "s3cret-Kx9", "REFRESH": "rt-0", "PASSWORD": "pw-Lm4", "API_KEY": "k3y-Ab7"]

@Suite("auth", .timeLimit(.minutes(6)))
struct AuthTests {
    /// A job file with `auth` definitions and one job `items` using `use`.
    private func authJob(_ definition: String, use: String = "api", keys: String = "") -> String {
        """
        version: 1
        auth:
          api:
        \(definition.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        jobs:
          - name: items
            url: "BASE/items?page={page}"
            records: data.list
            id: id
            table: t_item
            auth: \(use)
        \(keys.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    @Test("bearer, basic and api_key in a header, the query or a cookie reach the API; the key is in no stored URL")
    func givenCredentials() async throws {
        let cases: [(definition: String, check: @Sendable (FixtureRequest) -> Bool)] = [
            ("type: bearer\ntoken: \"${API_KEY}\"", { $0.headers["authorization"] == "Bearer k3y-Ab7" }),
            ("type: basic\nusername: ada\npassword: \"${PASSWORD}\"",
             { $0.headers["authorization"] == "Basic " + Data("ada:pw-Lm4".utf8).base64EncodedString() }),
            ("type: api_key\nvalue: \"${API_KEY}\"\nheader: X-Api-Key", { $0.headers["x-api-key"] == "k3y-Ab7" }),
            ("type: api_key\nvalue: \"${API_KEY}\"\nquery: api_key", { $0.parameter("api_key") == "k3y-Ab7" }),
            ("type: api_key\nvalue: \"${API_KEY}\"\ncookie: key", { $0.headers["cookie"] == "key=k3y-Ab7" }),
        ]
        for (definition, check) in cases {
            let harness = try Harness()
            let summary = try await FixtureServer.with({ request in
                guard check(request) else { return .json(#"{"detail":"no"}"#, status: 401) }
                let page = Int(request.parameter("page") ?? "") ?? 0
                return .json(page <= 2 ? #"{"data":{"list":[{"id":"\#(page)"}]}}"# : #"{"data":{"list":[]}}"#)
            }) { server in
                try await harness.run(authJob(definition), server: server, environment: environment)
            }
            #expect(summary.jobs.map(\.error) == [nil], "\(definition)")
            #expect(try harness.ids() == ["1", "2"], "\(definition)")
            let stored = try await harness.database("t_item.sqlite").read { db in
                try String.fetchAll(db, sql: "SELECT url FROM _mirror_pages ORDER BY url")
            }
            #expect(stored.count == 3 && stored.allSatisfy { !$0.contains("k3y") && !$0.contains("api_key") }, "\(stored)")
        }
    }

    @Test("a token refused mid-walk at concurrency 8 is fetched anew exactly once; every page is stored, none counted as retried")
    func refreshedOnceMidWalk() async throws {
        let harness = try Harness()
        let desk = TokenDesk(TokenDesk.State(revokeAfterPage: 12))
        let definition = """
            type: oauth2
            token_url: BASE/token
            client_id: app-1
            client_secret: "${CLIENT_SECRET}"
            """
        let summary = try await FixtureServer.with(desk.handle) { server in
            try await harness.run(authJob(definition, keys: "concurrency: 8\nretries: 0"), server: server, environment: environment)
        }
        #expect(summary.jobs.map(\.error) == [nil])
        #expect(try harness.ids().count == 400)
        #expect(desk.tokenRequests.count == 2)
        #expect(desk.state.withLock { $0.unauthorized } >= 1)
        #expect(summary.jobs.first?.retries == 0)
    }

    @Test("client_secret_basic sends the client in an Authorization header, not in the form")
    func clientSecretBasic() async throws {
        let harness = try Harness()
        let desk = TokenDesk()
        let definition = """
            type: oauth2
            token_url: BASE/token
            client_id: app-1
            client_secret: "${CLIENT_SECRET}"
            client_auth: client_secret_basic
            scope: "read write"
            """
        let summary = try await FixtureServer.with(desk.handle) { server in
            try await harness.run(authJob(definition), server: server, environment: environment)
        }
        #expect(summary.jobs.map(\.error) == [nil])
        #expect(try harness.ids().count == 400)
        let sent = try #require(desk.tokenRequests.first)
        #expect(String(decoding: sent.body, as: UTF8.self) == "grant_type=client_credentials&scope=read%20write")
        #expect(desk.tokenRequests.count == 1)
    }

    @Test("a 401 to a fresh token fails the page naming the auth definition; a refused client names what the endpoint said, masked")
    func refusedAgain() async throws {
        let harness = try Harness()
        let desk = TokenDesk(TokenDesk.State(refuseAll: true))
        let definition = """
            type: oauth2
            token_url: BASE/token
            client_id: app-1
            client_secret: "${CLIENT_SECRET}"
            """
        let summary = try await FixtureServer.with(desk.handle) { server in
            let summary = try await harness.run(authJob(definition), server: server, environment: environment)
            #expect(summary.jobs.map(\.error) == [
                "job 'items': GET \(server.base)/items?page=1: HTTP 401: HTTP 401 again with a fresh token: the API refuses the credentials of auth 'api' (oauth2); page 1 not stored, nothing stored",
            ])
            return summary
        }
        #expect(summary.jobs.first?.retries == 0)
        #expect(desk.tokenRequests.count == 2)

        let wrong = try Harness()
        let refused = try await FixtureServer.with(TokenDesk().handle) { server in
            let summary = try await wrong.run(authJob(definition), server: server, environment: ["CLIENT_SECRET": "wrong"])
            #expect(summary.jobs.map(\.error) == [
                "job 'items': GET \(server.base)/items?page=1: not sent: auth 'api' (oauth2): the token endpoint \(server.base)/token answered HTTP 401: invalid_client (client secret REDACTED not known); page 1 not stored, nothing stored",
            ])
            return summary
        }
        #expect(refused.jobs.first?.retries == 0)
    }

    @Test("a rotated refresh token is written to the token store (mode 0600) before use, and the next run starts from it")
    func rotation() async throws {
        let harness = try Harness()
        let desk = TokenDesk()
        let store = harness.folder + "/state/api.json"
        let definition = """
            type: oauth2
            grant: refresh_token
            token_url: BASE/token
            client_id: app-1
            client_secret: "${CLIENT_SECRET}"
            refresh_token: "${REFRESH}"
            token_store: state/api.json
            """
        try await FixtureServer.with(desk.handle) { server in
            for run in 1...3 {
                let summary = try await harness.run(authJob(definition), server: server, environment: environment)
                #expect(summary.jobs.map(\.error) == [nil], "run \(run)")
                let saved = try #require(try TokenStore(path: store).read())
                #expect(saved.refreshToken == "rt-\(run)")
            }
        }
        #expect(desk.state.withLock { $0.refreshTokensSeen } == ["rt-0", "rt-1", "rt-2"])
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: store)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        // A new login: the job file names another refresh token, which wins over the store's chain.
        let again = TokenDesk(TokenDesk.State(refreshToken: "rt-new"))
        try await FixtureServer.with(again.handle) { server in
            var changed = environment
            changed["REFRESH"] = "rt-new"
            let summary = try await harness.run(authJob(definition), server: server, environment: changed)
            #expect(summary.jobs.map(\.error) == [nil])
        }
        #expect(again.state.withLock { $0.refreshTokensSeen } == ["rt-new"])
    }

    @Test("a token store that cannot be written fails the job before the refresh is sent, naming the store and why; the refresh token still works after")
    func unwritableStore() async throws {
        let harness = try Harness()
        let desk = TokenDesk()
        let store = harness.folder + "/state/api.json"
        // A regular file where the store's folder should be.
        try "not a folder".write(toFile: harness.folder + "/state", atomically: true, encoding: .utf8)
        let definition = """
            type: oauth2
            grant: refresh_token
            token_url: BASE/token
            client_id: app-1
            client_secret: "${CLIENT_SECRET}"
            refresh_token: "${REFRESH}"
            token_store: state/api.json
            """
        try await FixtureServer.with(desk.handle) { server in
            let summary = try await harness.run(authJob(definition), server: server, environment: environment)
            #expect(summary.jobs.map(\.error) == [
                "job 'items': GET \(server.base)/items?page=1: not sent: auth 'api' (oauth2): cannot write the token store '\(store)' (not a directory), so the refresh token was not sent: it still works once the token store can be written; page 1 not stored, nothing stored",
            ])
            #expect(desk.tokenRequests.isEmpty)
            try FileManager.default.removeItem(atPath: harness.folder + "/state")
            let again = try await harness.run(authJob(definition), server: server, environment: environment)
            #expect(again.jobs.map(\.error) == [nil])
        }
        #expect(desk.state.withLock { $0.refreshTokensSeen } == ["rt-0"])
        #expect(try TokenStore(path: store).read()?.refreshToken == "rt-1")
        // Nothing is left of the proof that the store can be written.
        #expect(try FileManager.default.contentsOfDirectory(atPath: harness.folder + "/state") == ["api.json"])
    }

    @Test("a refused refresh token says which one was sent: the stored one, from which token store and when it was saved, or the configured one; and what starts a new chain")
    func brokenChain() async throws {
        let harness = try Harness()
        let desk = TokenDesk()
        let store = harness.folder + "/state/api.json"
        let definition = """
            type: oauth2
            grant: refresh_token
            token_url: BASE/token
            client_id: app-1
            client_secret: "${CLIENT_SECRET}"
            refresh_token: "${REFRESH}"
            token_store: state/api.json
            """
        try await FixtureServer.with(desk.handle) { server in
            let first = try await harness.run(authJob(definition), server: server, environment: environment)
            #expect(first.jobs.map(\.error) == [nil])
            let saved = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: store))) as? [String: Any])
            let savedAt = try #require(saved["saved_at"] as? String)
            // The provider has forgotten the chain (a revoked grant, another client's refresh).
            desk.state.withLock { $0.refreshToken = "rt-elsewhere" }
            let second = try await harness.run(authJob(definition), server: server, environment: environment)
            #expect(second.jobs.map(\.error) == [
                "job 'items': GET \(server.base)/items?page=1: not sent: auth 'api' (oauth2): the token endpoint \(server.base)/token refused the stored refresh token (the token store '\(store)', saved \(savedAt)): invalid_grant (refresh token is not valid); a new refresh_token in the job file (or in the environment variable it names) starts a new chain; page 1 not stored, nothing stored",
            ])
            let fresh = try Harness()
            let configured = try await fresh.run(authJob(definition), server: server, environment: environment)
            #expect(configured.jobs.map(\.error) == [
                "job 'items': GET \(server.base)/items?page=1: not sent: auth 'api' (oauth2): the token endpoint \(server.base)/token refused the configured refresh_token: invalid_grant (refresh token is not valid); a new refresh_token in the job file (or in the environment variable it names) starts a new chain; page 1 not stored, nothing stored",
            ])
        }
    }

    @Test("a token holding CR, LF or NUL is refused as it arrives, naming the auth definition and the token endpoint; the API is not asked")
    func controlCharacters() async throws {
        for answered in [#"tok\r\nX-Injected: 1"#, #"tok\u0000x"#, #"tok\nx"#] {
            let harness = try Harness()
            let desk = TokenDesk(TokenDesk.State(answered: answered))
            let definition = """
                type: oauth2
                token_url: BASE/token
                client_id: app-1
                client_secret: "${CLIENT_SECRET}"
                """
            try await FixtureServer.with(desk.handle) { server in
                let summary = try await harness.run(authJob(definition), server: server, environment: environment)
                #expect(summary.jobs.map(\.error) == [
                    "job 'items': GET \(server.base)/items?page=1: not sent: auth 'api' (oauth2): the token endpoint \(server.base)/token answered a token holding a control character (such as CR, LF or NUL), which no request can carry; it is not used; page 1 not stored, nothing stored",
                ], "\(answered)")
            }
            #expect(desk.state.withLock { $0.pagesServed + $0.unauthorized } == 0)
        }
    }

    @Test("a session logs in once, sends its token in a header, and logs in again when the API refuses it")
    func session() async throws {
        let harness = try Harness()
        let desk = TokenDesk(TokenDesk.State(revokeAfterPage: 5))
        let definition = """
            type: session
            login:
              url: BASE/login
              body: { user: ada, password: "${PASSWORD}" }
            token_path: data.token
            header: X-Session
            prefix: ""
            """
        let summary = try await FixtureServer.with(desk.handle) { server in
            try await harness.run(authJob(definition, keys: "concurrency: 1"), server: server, environment: environment)
        }
        #expect(summary.jobs.map(\.error) == [nil])
        #expect(try harness.ids().count == 400)
        #expect(desk.state.withLock { $0.logins } == 2)
    }

    @Test("a fetched token goes alone in a header other than Authorization unless 'prefix' says otherwise; Authorization gets 'Bearer '")
    func tokenHeaderPrefix() async throws {
        let login = "type: session\nlogin: { url: BASE/login, body: { user: ada, password: \"${PASSWORD}\" } }\ntoken_path: data.token"
        let oauth = "type: oauth2\ntoken_url: BASE/token\nclient_id: app-1\nclient_secret: \"${CLIENT_SECRET}\""
        let cases: [(definition: String, header: String, value: String)] = [
            (login + "\nheader: X-Session-Token", "x-session-token", "sess-Zq"),
            (login + "\nheader: X-Session-Token\nprefix: \"Token \"", "x-session-token", "Token sess-Zq"),
            (login, "authorization", "Bearer sess-Zq"),
            (oauth + "\nheader: X-Api-Token", "x-api-token", "tok-Zq"),
            (oauth + "\nheader: Authorization", "authorization", "Bearer tok-Zq"),
        ]
        for (definition, header, value) in cases {
            let harness = try Harness()
            let sent = try await FixtureServer.with({ request in
                switch request.path {
                case "/login": return .json(#"{"data":{"token":"sess-Zq"}}"#)
                case "/token": return .json(#"{"access_token":"tok-Zq","expires_in":3600}"#)
                default: return .json(#"{"data":{"list":[]}}"#)
                }
            }) { server in
                let summary = try await harness.run(authJob(definition), server: server, environment: environment)
                #expect(summary.jobs.map(\.error) == [nil], "\(definition)")
                return server.requests.filter { $0.path == "/items" }.map { $0.headers[header] }
            }
            #expect(!sent.isEmpty && Set(sent) == [value], "\(definition)")
        }
    }

    @Test("a token request, a JWT exchange and a login follow no redirect to another origin: it never sees their credentials")
    func credentialsStayOnOrigin() async throws {
        let key = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../MirrorHTTPTests/Fixtures/jwt/rsa-pkcs8.pem").path
        let definitions: [(definition: String, endpoint: String, what: String)] = [
            ("type: oauth2\ntoken_url: BASE/token\nclient_id: app-1\nclient_secret: \"${CLIENT_SECRET}\"\nclient_auth: client_secret_basic",
             "/token", "auth 'api' (oauth2): the token endpoint"),
            ("type: jwt\nalgorithm: RS256\nprivate_key_file: \(key)\nissuer: \"12345\"\nexchange: bearer\ntoken_url: BASE/token",
             "/token", "auth 'api' (jwt): the token endpoint"),
            ("type: session\nlogin:\n  url: BASE/login\n  body: { user: ada, password: \"${PASSWORD}\" }\n  headers: { X-Login-Key: \"${API_KEY}\" }\ntoken_path: data.token\nheader: X-Session",
             "/login", "auth 'api' (session): the login"),
        ]
        for status in [302, 307, 308] {
            for (definition, endpoint, what) in definitions {
                let harness = try Harness()
                try await FixtureServer.with({ _ in .json(#"{"access_token":"other-Zq","token":"other-Zq","data":{"token":"other-Zq"}}"#) }) { other in
                    try await FixtureServer.with({ request in
                        switch request.path {
                        case "/token", "/login":
                            return FixtureResponse(status: status, headers: [("Location", "\(other.base)\(request.path)")], body: [])
                        default: return .json(#"{"data":{"list":[]}}"#)
                        }
                    }) { server in
                        // One request at a time: the walk asks for the credential once before it fails.
                        let summary = try await harness.run(authJob(definition, keys: "retries: 0\nconcurrency: 1"), server: server,
                                                            environment: environment)
                        #expect(summary.jobs.map(\.error) == [
                            "job 'items': GET \(server.base)/items?page=1: not sent: \(what) \(server.base)\(endpoint): HTTP \(status) redirect to \(other.base), another origin: not followed, since the request's credentials go to its own origin only (set the URL to the new origin if it is to be trusted); page 1 not stored, nothing stored",
                        ], "\(status) \(definition)")
                        #expect(server.requests.map(\.path) == [endpoint], "\(status) \(definition)")
                        #expect(other.requests.map(\.target) == [], "\(status) \(definition)")
                    }
                }
            }
        }
    }

    @Test("a token is fetched once for every job naming its definition, and anew once it nears its end")
    func sharedAndRenewed() async throws {
        let time = ManualClock()
        let desk = TokenDesk(expiresIn: 100)
        try await FixtureServer.with(desk.handle) { server in
            let spec = AuthSpec(name: "api", key: "k", kind: .oauth2(AuthSpec.OAuth2(
                grant: .clientCredentials, tokenURL: server.base + "/token", clientID: "app-1", clientSecret: "s3cret-Kx9",
                clientAuth: .post, scope: nil, audience: nil, parameters: [], refreshToken: nil, tokenStore: nil)))
            let keeper = TokenKeeper(source: TokenSource(spec: spec))
            let client = HTTPClient(clock: time.clock)
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<8 { group.addTask { try await keeper.token(client: client, timeout: 5).value } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(tokens == ["tok-1-Zq"])
            // 100 s of life, a 60 s margin: renewed at half its life, 50 s.
            time.advance(by: .seconds(49))
            #expect(try await keeper.token(client: client, timeout: 5).value == "tok-1-Zq")
            time.advance(by: .seconds(2))
            #expect(try await keeper.token(client: client, timeout: 5).value == "tok-2-Zq")
        }
        #expect(desk.tokenRequests.count == 2)
    }

    @Test("a token's life past 366 days, infinite or too large for any type is 366 days; below zero it is none; a value that is not a number is not read")
    func lifetimes() async throws {
        let time = ManualClock()
        let year = 366 * 86_400.0
        // The member of the answer, and when the token is fetched anew (seconds from now; nil: once refused).
        let cases: [(String, Double?)] = [
            (#""expires_in":100"#, 50),
            (#""expires_in":1e30"#, year - 60),
            (#""expires_in":1e400"#, year - 60),
            (#""expires_in":"inf""#, year - 60),
            (#""expires_in":123456789012345678901234567890"#, year - 60),
            (#""expires_at":1e25"#, year - 60),
            (#""expires_at":"1e400""#, year - 60),
            (#""expires_in":-5"#, 0),
            (#""expires_in":"-inf""#, 0),
            (#""expires_at":-1e400"#, 0),
            (#""expires_in":"nan""#, nil),
            (#""expires_at":"NaN""#, nil),
            (#""expires_in":"soon""#, nil),
            (#""expires_in":null"#, nil),
        ]
        for (member, renewIn) in cases {
            let desk = TokenDesk(TokenDesk.State(expires: member))
            try await FixtureServer.with(desk.handle) { server in
                let spec = AuthSpec(name: "api", key: "k", kind: .oauth2(AuthSpec.OAuth2(
                    grant: .clientCredentials, tokenURL: server.base + "/token", clientID: "app-1", clientSecret: "s3cret-Kx9",
                    clientAuth: .post, scope: nil, audience: nil, parameters: [], refreshToken: nil, tokenStore: nil)))
                let token = try await TokenSource(spec: spec).fetch(client: HTTPClient(clock: time.clock), timeout: 5, generation: 1)
                #expect(token.value == "tok-1-Zq", "\(member)")
                #expect(token.renewAt == renewIn.map { time.now + .seconds($0) }, "\(member)")
            }
        }
    }

    @Test("no token, secret or password is in the summary, the logs or any file of the output folder")
    func noSecretAnywhere() async throws {
        let harness = try Harness()
        let desk = TokenDesk(TokenDesk.State(revokeAfterPage: 3))
        let yaml = """
            version: 1
            auth:
              api:
                type: oauth2
                grant: refresh_token
                token_url: BASE/token
                client_id: app-1
                client_secret: "${CLIENT_SECRET}"
                refresh_token: "${REFRESH}"
              login:
                type: session
                login: { url: BASE/login, body: { user: ada, password: "${PASSWORD}" } }
                token_path: data.token
                query: session
            jobs:
              - { name: items, url: "BASE/items?page={page}", records: data.list, id: id, table: t_item, auth: api,
                  concurrency: 2 }
              - { name: failing, url: "BASE/items?page={page}", records: data.list, id: id, table: t_fail, auth: login,
                  retries: 0 }
            """
        var capture = InMemoryLogHandler()
        capture.logLevel = .trace
        let summary = try await FixtureServer.with(desk.handle) { server in
            let file = try harness.load(yaml, server: server, environment: environment)
            var options = Runner.Options()
            options.output = harness.output
            options.retry = RetryPolicy(baseDelay: 0.01)
            options.parallel = 1
            return try await Runner(client: HTTPClient(), logger: Logger(label: "t", factory: { [capture] _ in capture }))
                .run([file], options: options)
        }
        let reportPath = harness.folder + "/report.json"
        try RunReport(summary: summary, exitStatus: 0, startedAt: "s", finishedAt: "f").write(to: reportPath)
        #expect(try harness.ids().count == 400)
        let places = harness.writtenBytes([("summary", summary.reported),
                                           ("logs", capture.entries.map { "\($0.level) \($0.message) \($0.metadata)" }.joined(separator: "\n"))])
        let issued = desk.state.withLock { $0.issued }
        #expect(issued >= 3)
        let secrets = ["s3cret-Kx9", "rt-0", "rt-1", "rt-2", "pw-Lm4"] + (1...issued).map { "-\($0)-Zq" }
        expectNoSecret(secrets, in: places)
    }

    @Test("an account picks its definition by name from the environment; jobs naming one definition share it")
    func perAccount() throws {
        let harness = try Harness()
        let yaml = """
            version: 1
            not_secret: [SHOP]
            auth:
              shop_eu: { type: bearer, token: "${EU_TOKEN}" }
              shop_us: { type: bearer, token: "${US_TOKEN}" }
            defaults: { records: data, id: id, account: "${SHOP}", auth: "shop_${SHOP}" }
            jobs:
              - { name: orders, url: "https://shop.example.com/orders", table: t_order }
              - { name: refunds, url: "https://shop.example.com/refunds", table: t_refund }
            """
        let file = try harness.load(yaml, environment: ["SHOP": "us", "EU_TOKEN": "eu-1234", "US_TOKEN": "us-5678"])
        #expect(file.jobs.map { $0.auth?.name } == ["shop_us", "shop_us"])
        #expect(file.jobs.map { $0.auth?.key } == [file.jobs[0].auth?.key, file.jobs[0].auth?.key])
        #expect(file.jobs[0].redactor.redact("a us-5678 b") == "a REDACTED b")
    }

    @Test("job-file errors in auth point at the key")
    func configErrors() throws {
        let harness = try Harness()
        let cases: [(String, String)] = [
            (authJob("type: bearer\ntoken: x", use: "apj"),
             "jobs.yaml:13:11: auth 'apj' of job 'items' is not defined (did you mean 'api'?)"),
            (authJob("type: bearer\ntoken: x\nclient_id: y"), "jobs.yaml:7:5: 'client_id' does not apply to auth 'api' of type bearer"),
            (authJob("type: oauth"), "jobs.yaml:5:11: 'type' of auth 'api' must be one of bearer, basic, api_key, oauth2, jwt, session, aws_sigv4, not 'oauth' (did you mean 'oauth2'?)"),
            (authJob("type: oauth2\ntoken_url: ftp://x\nclient_id: a"), "jobs.yaml:6:16: 'token_url' of auth 'api' must start with http:// or https://, not 'ftp://x'"),
            (authJob("type: api_key\nvalue: k"), "jobs.yaml:5:5: auth 'api' (type api_key) must say where the key goes: 'header', 'query' or 'cookie'"),
            (authJob("type: oauth2\ngrant: refresh_token\ntoken_url: http://x/t\nclient_id: a\nrefresh_token: r\ntoken_store: cache/t.json"),
             "jobs.yaml:10:18: 'token_store' of auth 'api' must be outside the output folder, which is copied to devices"),
        ]
        for (yaml, message) in cases {
            let text = yaml.replacingOccurrences(of: "version: 1\n", with: "version: 1\noutput: cache\n")
            let path = harness.folder + "/jobs.yaml"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            do {
                _ = try JobFileLoader(environment: [:]).load(path: path)
                Issue.record("loaded: \(yaml)")
            } catch {
                // The definition is reported once: the job naming it is not told that it is undefined.
                let messages = error.diagnostics.map(\.description).filter { !$0.contains("'url' of job") }
                #expect(messages == [message.replacingOccurrences(of: "jobs.yaml", with: path)])
            }
        }
    }
}
