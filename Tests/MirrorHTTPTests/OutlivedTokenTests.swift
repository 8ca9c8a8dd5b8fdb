import Foundation
@testable import MirrorHTTP
import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

/// A token endpoint and an API in one fixture server, on a clock the API moves: tokens live
/// 100 s (fetched anew after 50), and each answer to `/page` may first move the clock, or make
/// another request (`/other`) that replaces the token. Requests may take 10,000 s.
private final class TokenAPI: Sendable {
    /// What the API does with a request for `/page` carrying the `n`th token, before it answers.
    enum Move: Sendable {
        /// Answers at once.
        case none
        /// Moves the clock past the token's end (150 s), then answers 401.
        case outlive
        /// Moves the clock past the token's renewal (60 s, before its end) and sends another
        /// request, which fetches the next token: the token endpoint then revokes every token
        /// before it, as django-oauth-toolkit does when it rotates.
        case replace
    }

    let time = ManualClock()
    let client: HTTPClient
    /// Tokens issued so far; the API accepts only the newest, and only when `accepts` says so.
    let issued = Atomic<Int>(0)
    let accepts: @Sendable (Int) -> Bool
    let move: @Sendable (Int) -> Move

    init(accepts: @escaping @Sendable (Int) -> Bool, move: @escaping @Sendable (Int) -> Move) {
        client = HTTPClient(clock: time.clock)
        self.accepts = accepts
        self.move = move
    }

    /// `auth` with the server's token URL.
    func auth(_ server: FixtureServer) -> AuthSpec {
        AuthSpec(name: "api", key: "api", kind: .oauth2(AuthSpec.OAuth2(
            grant: .clientCredentials, tokenURL: server.base + "/token", clientID: "app-1", clientSecret: "s3cret",
            clientAuth: .post, scope: nil, audience: nil, parameters: [], refreshToken: nil, tokenStore: nil)))
    }

    func get(_ path: String, server: FixtureServer) async throws(HTTPError) -> HTTPResponse {
        let url = RedactedURL(real: server.base + path, redactor: .none)
        return try await client.send(HTTPRequest(method: "GET", url: url, headers: [], body: nil, timeout: 10_000,
                                                 maxBytes: 1 << 20, auth: auth(server)))
    }

    func handle(_ request: FixtureRequest, server: @escaping @Sendable () -> FixtureServer) async -> FixtureResponse {
        if request.path == "/token" {
            let n = issued.add(1, ordering: .sequentiallyConsistent).newValue
            return .json(#"{"access_token": "tok\#(n)", "token_type": "Bearer", "expires_in": 100}"#)
        }
        guard let bearer = request.headers["authorization"], bearer.hasPrefix("Bearer tok"),
              let n = Int(bearer.dropFirst("Bearer tok".count)) else {
            return .json(#"{"error": "no token"}"#, status: 401)
        }
        switch request.path == "/page" ? move(n) : .none {
        case .none:
            break
        case .outlive:
            time.advance(by: .seconds(150))
            return .json(#"{"error": "invalid_token", "error_description": "expired"}"#, status: 401)
        case .replace:
            time.advance(by: .seconds(60))
            _ = try? await get("/other", server: server())
        }
        let newest = issued.load(ordering: .sequentiallyConsistent)
        guard n == newest, accepts(n) else { return .json(#"{"error": "invalid_token"}"#, status: 401) }
        return .json(#"{"token": \#(n)}"#)
    }

    /// Sends `GET /page` to a fixture server that answers with `handle`.
    func page() async throws -> (Result<String, HTTPError>, tokens: Int, sent: [String]) {
        let shared = Mutex<FixtureServer?>(nil)
        return try await FixtureServer.with({ request in
            await self.handle(request) { shared.withLock { $0! } }
        }) { server in
            shared.withLock { $0 = server }
            let result: Result<String, HTTPError>
            do throws(HTTPError) {
                result = .success(String(decoding: try await get("/page", server: server).body, as: UTF8.self))
            } catch {
                result = .failure(error)
            }
            let sent = server.requests.filter { $0.path == "/page" }.map { $0.headers["authorization"] ?? "" }
            return (result, issued.load(ordering: .sequentiallyConsistent), sent)
        }
    }
}

@Suite("a 401 to a token already replaced or ended", .timeLimit(.minutes(6)))
struct OutlivedTokenTests {
    @Test("a request whose token ends before its 401 comes is sent again with a new token, however often that happens in a row, up to 3 times")
    func ended() async throws {
        let api = TokenAPI(accepts: { _ in true }, move: { $0 < 4 ? .outlive : .none })
        let (result, tokens, sent) = try await api.page()
        #expect(try result.get() == #"{"token": 4}"#, "\(result)")
        #expect(tokens == 4)
        #expect(sent == ["Bearer tok1", "Bearer tok2", "Bearer tok3", "Bearer tok4"])
    }

    @Test("a request whose token another request's refresh replaced while it was under way is sent again with the new one, twice in a row")
    func replaced() async throws {
        // tok1: /page's answer waits for /other, which fetches tok2 (revoking tok1), then is a
        // 401. tok2: the same again with tok3: a second 401 in a row, to a token that had been
        // replaced, though it had not ended.
        let api = TokenAPI(accepts: { _ in true }, move: { $0 < 3 ? .replace : .none })
        let (result, tokens, sent) = try await api.page()
        #expect(try result.get() == #"{"token": 3}"#)
        #expect(tokens == 3)
        #expect(sent == ["Bearer tok1", "Bearer tok2", "Bearer tok3"])
    }

    @Test("a second 401 to a token that is still the newest and still alive is the API refusing the credentials: 2 tokens, then the request fails")
    func refused() async throws {
        let api = TokenAPI(accepts: { _ in false }, move: { _ in .none })
        let (result, tokens, sent) = try await api.page()
        guard case let .failure(error) = result else { Issue.record("no failure: \(result)"); return }
        #expect(error.status == 401)
        #expect(error.reason == "HTTP 401 again with a fresh token: the API refuses the credentials of auth 'api' (oauth2)")
        #expect(error.kind == .invalid)
        #expect(tokens == 2)
        #expect(sent == ["Bearer tok1", "Bearer tok2"])
    }

    @Test("tokens that end before every answer fail the request after 4 of them, as a failure worth retrying")
    func endedEveryTime() async throws {
        let api = TokenAPI(accepts: { _ in true }, move: { _ in .outlive })
        let (result, tokens, sent) = try await api.page()
        guard case let .failure(error) = result else { Issue.record("no failure: \(result)"); return }
        #expect(error.status == 401)
        #expect(error.reason == "HTTP 401 to 4 tokens in a row, each replaced or ended before its answer came: requests take longer than the tokens of auth 'api' (oauth2) last")
        #expect(error.kind == .transient)
        #expect(tokens == 4)
        #expect(sent == ["Bearer tok1", "Bearer tok2", "Bearer tok3", "Bearer tok4"])
    }
}
