package import AsyncHTTPClient
import Foundation
import Instrumentation
package import MirrorModel
import NIOCore
package import NIOHTTP1
import NIOHTTPCompression
import Synchronization

/// A request to send. Its headers, body and URL may hold secrets: printed, dumped or
/// reflected, it shows its method, redacted URL, header names and body size only.
package struct HTTPRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package var method: String
    package var url: RedactedURL
    package var headers: [Header]
    package var body: [UInt8]?
    /// Seconds, for the whole exchange.
    package var timeout: Double
    /// A response body larger than this is abandoned.
    package var maxBytes: Int
    /// Knows the secrets among the headers and the body: they do not follow a redirect
    /// to another origin.
    package var redactor: Redactor
    /// How the request says who sends it: its credential is fetched (or made) as it is
    /// sent, and goes on no hop to another origin.
    package var auth: AuthSpec?
    /// The credential of one attempt.
    package var credential: Credential?
    /// A request whose own headers, body or URL are a credential (a token request, a login,
    /// STS): it follows redirects on its origin only, and fails at one to another origin.
    package var ownOriginOnly = false
    /// Sends the W3C `traceparent` (and `tracestate`) of the task's span (`propagate_trace`),
    /// when a tracer is bootstrapped.
    package var propagateTrace = false

    package init(method: String, url: RedactedURL, headers: [Header], body: [UInt8]?,
                timeout: Double, maxBytes: Int, redactor: Redactor = .none, auth: AuthSpec? = nil) {
        self.redactor = redactor
        self.auth = auth
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maxBytes = maxBytes
    }

    package var description: String {
        "\(method) \(url) [\(headers.map(\.name).joined(separator: ", "))]" + (body.map { " (\($0.count) bytes)" } ?? "")
    }

    package var debugDescription: String { description }

    /// `timeout` as a duration.
    var span: Duration { .nanoseconds(Int64(timeout * 1e9)) }

    package var customMirror: Mirror {
        Mirror(self, children: ["method": method, "url": url, "headers": headers.map(\.name), "body": body?.count as Any,
                                "timeout": timeout, "maxBytes": maxBytes, "auth": auth?.description as Any])
    }
}

package struct HTTPResponse: Sendable {
    package let status: Int
    /// Header names lowercased.
    package let headers: [String: String]
    /// The body's length in bytes, as received (decompressed).
    package let bodyCount: Int
    private let storage: Body

    package init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        bodyCount = body.count
        storage = Body(body)
    }

    /// The body, until it is taken.
    package var body: [UInt8] { storage.bytes.withLock { $0 } }

    /// Hands the body over as the only reference to its bytes, so that a page's parser
    /// compacts it in place instead of copying it; the response keeps no body.
    package func takeBody() -> [UInt8] {
        storage.bytes.withLock { bytes in
            var taken: [UInt8] = []
            swap(&taken, &bytes)
            return taken
        }
    }

    private final class Body: Sendable {
        let bytes: Mutex<[UInt8]>
        init(_ bytes: [UInt8]) { self.bytes = Mutex(bytes) }
    }
}

/// Every HTTP exchange of the program goes through this type, so the client library
/// can be swapped without touching the walk.
package final class HTTPClient: Sendable {
    /// One connection pool for the process: a static lives as long as the program, so
    /// it never needs shutting down.
    package static let shared: AsyncHTTPClient.HTTPClient = {
        var configuration = AsyncHTTPClient.HTTPClient.Configuration(
            // Redirects are followed by `execute`, which knows what must not cross origins.
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(30)),
            decompression: .enabled(limit: .none))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        configuration.connectionPool.idleTimeout = .seconds(30)
        // A refused connection fails the request at once: the job's `retries` decide.
        configuration.connectionPool.retryConnectionEstablishment = false
        // No request is traced: a span for each request, even one that records nothing,
        // cost 2% of the CPU time of 2,000 downloads.
        configuration.tracing.tracer = nil
        return AsyncHTTPClient.HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// What the deadlines of requests and downloads read, and the waits before retries.
    package let clock: RunClock
    /// The token keepers of the auth definitions its requests used, by definition key:
    /// every job of a run shares one client, so jobs naming one definition share its token.
    private let keepers = Mutex<[String: TokenKeeper]>([:])

    package init(clock: RunClock = .continuous) {
        self.clock = clock
    }

    /// Sends `request` and reads its body whole. `admit`, if given, is called with the
    /// size of each piece of the body before it is kept, and may wait (see `PageBudget`).
    /// A request with `auth` carries its credential; a 401 to a fetched token fetches a
    /// new one and sends the request once more (not counted as a retry); a second 401 fails,
    /// unless the token it answered had been replaced or had ended by then (see `authorized`).
    package func send(_ request: HTTPRequest,
                     admit: (@Sendable (Int) async throws -> Void)? = nil) async throws(HTTPError) -> HTTPResponse {
        try await authorized(request) { (request) throws(HTTPError) in
            let response = try await attempt(request, admit: admit)
            return (response, response.status)
        }
    }

    /// Runs `exchange` with `request` carrying its credential, and once more with a fresh
    /// one when the first answer is a 401 to a fetched token. A 401 to a token that had been
    /// replaced or had ended by the time it came (`TokenKeeper.outlived`) is not the API
    /// refusing the credentials: the request is sent again with the newest token, up to
    /// `outlivedTokensAllowed` times.
    package func authorized<Response>(
        _ request: HTTPRequest, exchange: (HTTPRequest) async throws(HTTPError) -> (Response, status: Int)
    ) async throws(HTTPError) -> Response {
        guard let auth = request.auth else { return try await exchange(request).0 }
        var request = request
        guard auth.fetchesTokens else {
            request.credential = Self.staticCredential(auth)
            return try await exchange(request).0
        }
        let keeper = keeper(for: auth)
        var refused = false
        var outlived = 0
        while true {
            let token: Token
            do {
                token = try await keeper.token(client: self, timeout: request.timeout)
            } catch let failure as AuthFailure {
                throw HTTPError.auth(request.url, failure)
            } catch {
                throw HTTPError.cancelled(request.url)
            }
            request.credential = Credential(token: token.value, placement: auth.placement, auth: auth.name,
                                            generation: token.generation)
            let (response, status) = try await exchange(request)
            guard status == 401 else { return response }
            if await keeper.outlived(token, now: clock.now) {
                outlived += 1
                guard outlived <= Self.outlivedTokensAllowed else {
                    throw HTTPError.outlived(request.url, auth: auth, tokens: outlived)
                }
            } else {
                guard !refused else { throw HTTPError.refused(request.url, auth: auth) }
                refused = true
            }
            await keeper.rejected(generation: token.generation)
        }
    }

    /// How many 401s to tokens already replaced or ended one request may meet before it fails.
    package static let outlivedTokensAllowed = 3

    /// Waits until the token fetches in flight have ended, `limit` at most: a refresh the
    /// server has already answered with a rotated refresh token is stored before the run
    /// ends, however its walk ended.
    package func settleTokens(within limit: Duration) async {
        let keepers = keepers.withLock { Array($0.values) }
        guard !keepers.isEmpty else { return }
        let first = FirstOf()
        let timer = Task { [clock] in
            try? await clock.sleep(until: clock.now + limit)
            first.end()
        }
        Task {
            for keeper in keepers { await keeper.settle() }
            first.end()
        }
        await first.wait()
        timer.cancel()
    }

    /// Resumes one waiter once, at the first of several ends.
    private final class FirstOf: Sendable {
        private let state = Mutex<(waiting: CheckedContinuation<Void, Never>?, ended: Bool)>((nil, false))

        func wait() async {
            await withCheckedContinuation { continuation in
                let ended = state.withLock { state in
                    if !state.ended { state.waiting = continuation }
                    return state.ended
                }
                if ended { continuation.resume() }
            }
        }

        func end() {
            let waiting = state.withLock { state in
                defer { state.waiting = nil }
                state.ended = true
                return state.waiting
            }
            waiting?.resume()
        }
    }

    /// The keeper of `auth`'s tokens, made the first time a request uses it.
    private func keeper(for auth: AuthSpec) -> TokenKeeper {
        keepers.withLock { keepers in
            if let keeper = keepers[auth.key] { return keeper }
            let keeper = TokenKeeper(source: TokenSource(spec: auth))
            keepers[auth.key] = keeper
            return keeper
        }
    }

    /// The credential of a definition whose token or key is given: the same for every request.
    private static func staticCredential(_ auth: AuthSpec) -> Credential {
        switch auth.kind {
        case let .bearer(token), let .apiKey(token):
            return Credential(token: token, placement: auth.placement, auth: auth.name, generation: 0)
        case let .basic(username, password):
            return Credential(.header(name: "Authorization", value: "Basic " + AuthSpec.basicCredentials(username, password)),
                              auth: auth.name)
        case let .awsSigV4(sigv4):
            return Credential(.signature(SigV4Signer(accessKey: sigv4.accessKey, secretKey: sigv4.secretKey,
                                                     sessionToken: sigv4.sessionToken, region: sigv4.region,
                                                     service: sigv4.service)), auth: auth.name)
        case .oauth2, .jwt, .session:
            preconditionFailure("\(auth) fetches its tokens")
        }
    }

    /// One exchange of `send`, with the credential the request carries.
    private func attempt(_ request: HTTPRequest,
                         admit: (@Sendable (Int) async throws -> Void)?) async throws(HTTPError) -> HTTPResponse {
        var status: Int?
        do {
            let deadline = PausableDeadline(clock.now + request.span, clock: clock)
            let response = try await Self.before(deadline) {
                try await Self.execute(request, deadline: deadline, compressed: true)
            }
            status = Int(response.status.code)
            let length = try Self.checkLength(response, request)
            let maxBytes = request.maxBytes
            // Time spent waiting for the walk's turn (`admit`) is not the server's: the
            // deadline stands still while the body waits.
            let waiting = admit.map { admit in
                { @Sendable (bytes: Int) async throws in
                    deadline.pause()
                    defer { deadline.resume() }
                    try await admit(bytes)
                }
            }
            let body = try await Self.before(deadline) {
                try await Self.collect(response.body, upTo: maxBytes, length: length, admit: waiting)
            }
            return HTTPResponse(status: Int(response.status.code), headers: Self.headers(response.headers), body: body)
        } catch {
            throw Self.failure(error, request, status: status, what: "body")
        }
    }

    /// The body of a response took longer than the request's timeout.
    struct TimedOut: Error {}

    /// A download slower on average than its minimum rate.
    struct TooSlow: Error {
        package let bytes: Int
        package let seconds: Int
        package let rate: Int
    }

    /// A deadline that stands still while it is paused: it passes only once the time
    /// spent running since it was set reaches its span. `pause` and `resume` come in pairs,
    /// one pair at a time.
    final class PausableDeadline: Sendable {
        private struct State {
            var deadline: RunClock.Instant
            var pausedAt: RunClock.Instant?
            /// The timer, waiting for the deadline to run again.
            var waiting: CheckedContinuation<Void, Never>?
        }

        private let state: Mutex<State>
        private let clock: RunClock

        init(_ deadline: RunClock.Instant, clock: RunClock) {
            state = Mutex(State(deadline: deadline))
            self.clock = clock
        }

        package func pause() {
            let now = clock.now
            state.withLock { $0.pausedAt = $0.pausedAt ?? now }
        }

        /// Runs again: the deadline moves back by the time it stood still.
        package func resume() {
            let now = clock.now
            let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let pausedAt = state.pausedAt {
                    state.deadline = state.deadline + (now - pausedAt)
                    state.pausedAt = nil
                }
                defer { state.waiting = nil }
                return state.waiting
            }
            waiting?.resume()
        }

        /// Returns when the deadline has passed; throws `CancellationError` if the task is
        /// cancelled while it runs. While paused it waits for `resume`, which the paused
        /// work always calls.
        package func passed() async throws {
            while true {
                let running = state.withLock { $0.pausedAt == nil ? $0.deadline : nil }
                if let running {
                    guard clock.now < running else { return }
                    try await clock.sleep(until: running)
                } else {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let running = state.withLock { state in
                            if state.pausedAt == nil { return true }
                            state.waiting = continuation
                            return false
                        }
                        if running { continuation.resume() }
                    }
                }
            }
        }
    }

    /// Runs `work`, failing with `TimedOut` at `deadline`: the wait for a response's head,
    /// then the reading of its body.
    private static func before<T: Sendable>(_ deadline: PausableDeadline,
                                            _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await deadline.passed()
                return nil
            }
            defer { group.cancelAll() }
            guard let result = try await group.next() ?? nil else { throw TimedOut() }
            return result
        }
    }

    /// Reads an unwanted body (a redirect's, an error page's), so that its connection can
    /// serve the next request; gives up on one that is large or slow.
    private static func discard(_ response: HTTPClientResponse, before deadline: PausableDeadline) async {
        _ = try? await before(deadline) { try await response.body.collect(upTo: 1 << 20) }
    }

    /// Sends the request and follows its redirects (see `Redirects`). `deadline` bounds what
    /// a redirect's body may take to read; the caller bounds the whole.
    private static func execute(_ request: HTTPRequest, deadline: PausableDeadline,
                                compressed: Bool) async throws -> HTTPClientResponse {
        var redirects = Redirects(request)
        for _ in 0...Redirects.limit {
            var headers = try headers(for: redirects, shownURL: request.url)
            if compressed, !headers.contains(name: "accept-encoding") {
                headers.add(name: "accept-encoding", value: "gzip, deflate")
            }
            if request.propagateTrace, let context = InstrumentationContext.current {
                InstrumentationSystem.instrument.inject(context, into: &headers, using: TraceHeaders())
            }
            var url = redirects.url
            redirects.credential?.apply(method: redirects.method, url: &url, headers: &headers, body: redirects.body)
            var outgoing = HTTPClientRequest(url: url)
            outgoing.method = HTTPMethod(rawValue: redirects.method)
            outgoing.headers = headers
            if let body = redirects.body { outgoing.body = .bytes(body) }
            // The deadline is `before`'s, on the client's clock, which cancels the request.
            let response = try await shared.execute(outgoing, deadline: .distantFuture)
            let code = Int(response.status.code)
            let location = response.headers.first(name: "location")
            guard Redirects.isRedirect(status: code, location: location), let location else { return response }
            await discard(response, before: deadline)
            try redirects.follow(status: code, location: location)
        }
        throw Redirects.tooMany
    }

    /// Only absolute http and https URLs are sent, with a port that TCP has (past 65535, the
    /// client library would stop the process).
    package static func isHTTP(_ url: String) -> Bool {
        let lower = url.prefix(8).lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), let parsed = URL(string: url), parsed.host != nil else {
            return false
        }
        return parsed.port.map { (0...65_535).contains($0) } ?? true
    }

    /// Same scheme, host and port, or an upgrade from http to https on the same host.
    static func sameOrigin(_ from: String, _ to: String) -> Bool {
        Origin(from)?.admits(to) ?? false
    }

    /// The headers of the request `redirects` is at, as the client library takes them;
    /// only http(s) URLs are sent.
    static func headers(for redirects: Redirects, shownURL: RedactedURL) throws(HTTPError) -> HTTPHeaders {
        guard Self.isHTTP(redirects.url) else {
            throw HTTPError.invalidURL(shownURL)
        }
        var headers = HTTPHeaders()
        for header in redirects.headers {
            headers.add(name: header.name, value: header.value.real)
        }
        if !headers.contains(name: "user-agent") {
            headers.add(name: "user-agent", value: "mirror")
        }
        if redirects.body != nil, !headers.contains(name: "content-type") {
            headers.add(name: "content-type", value: "application/json")
        }
        return headers
    }

    /// An announced length over the cap fails before any of the body is read. Returns
    /// the announced length.
    private static func checkLength(_ response: HTTPClientResponse, _ request: HTTPRequest) throws -> Int? {
        let length = response.headers.first(name: "content-length").flatMap(Int.init)
        if let length, length > request.maxBytes {
            throw NIOTooManyBytesError(maxBytes: request.maxBytes)
        }
        return length
    }

    /// Reads a body into one array, sized to its announced length when there is one: a
    /// page is held once, not once in the client's buffer and again in a copy.
    private static func collect(_ body: HTTPClientResponse.Body, upTo maxBytes: Int, length: Int?,
                                admit: (@Sendable (Int) async throws -> Void)?) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        // A compressed body's length is not its decompressed size: only a hint.
        if let length, length > 0 { bytes.reserveCapacity(length) }
        for try await chunk in body {
            guard chunk.readableBytes <= maxBytes - bytes.count else { throw NIOTooManyBytesError(maxBytes: maxBytes) }
            try await admit?(chunk.readableBytes)
            chunk.withUnsafeReadableBytes { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// Header names lowercased; repeated headers joined with ", ".
    package static func headers(_ received: HTTPHeaders) -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in received {
            let key = name.lowercased()
            headers[key] = headers[key].map { $0 + ", " + value } ?? value
        }
        return headers
    }

    package static func failure(_ error: any Error, _ request: HTTPRequest, status: Int?, what: String) -> HTTPError {
        switch error {
        case is NIOTooManyBytesError: return .tooLarge(request.url, cap: request.maxBytes, what: what, status: status)
        case let failure as WriteFailure: return .writeFailed(request.url, failure.reason, status: status)
        case let redirect as RedirectFailure: return .redirect(request.url, redirect.reason, status: status)
        case is TimedOut: return .timedOut(request.url, status: status)
        case let slow as TooSlow: return .tooSlow(request.url, bytes: slow.bytes, seconds: slow.seconds, rate: slow.rate,
                                                  status: status)
        default: return .classify(error, url: request.url, status: status)
        }
    }
}

/// Writes what the tracer propagates (W3C `traceparent`, `tracestate`) into a request's headers.
private struct TraceHeaders: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: key, value: value)
    }
}
