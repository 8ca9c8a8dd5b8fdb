import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// A request to send. Its headers, body and URL may hold secrets: printed, dumped or
/// reflected, it shows its method, redacted URL, header names and body size only.
public struct HTTPRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var method: String
    public var url: RedactedURL
    public var headers: [Header]
    public var body: [UInt8]?
    /// Seconds, for the whole exchange.
    public var timeout: Double
    /// A response body larger than this is abandoned.
    public var maxBytes: Int
    /// Knows the secrets among the headers and the body: they do not follow a redirect
    /// to another origin.
    public var redactor: Redactor

    public init(method: String, url: RedactedURL, headers: [Header], body: [UInt8]?,
                timeout: Double, maxBytes: Int, redactor: Redactor = .none) {
        self.redactor = redactor
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maxBytes = maxBytes
    }

    public var description: String {
        "\(method) \(url) [\(headers.map(\.name).joined(separator: ", "))]" + (body.map { " (\($0.count) bytes)" } ?? "")
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["method": method, "url": url, "headers": headers.map(\.name), "body": body?.count as Any,
                                "timeout": timeout, "maxBytes": maxBytes])
    }
}

public struct HTTPResponse: Sendable {
    public let status: Int
    /// Header names lowercased.
    public let headers: [String: String]
    public let body: [UInt8]

    public init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Every HTTP exchange of the program goes through this type, so the client library
/// can be swapped without touching the walk.
public final class HTTPClient: Sendable {
    /// One connection pool for the process: a static lives as long as the program, so
    /// it never needs shutting down.
    private static let shared: AsyncHTTPClient.HTTPClient = {
        var configuration = AsyncHTTPClient.HTTPClient.Configuration(
            // Redirects are followed by `execute`, which knows what must not cross origins.
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(30)),
            decompression: .enabled(limit: .none))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        configuration.connectionPool.idleTimeout = .seconds(30)
        // A refused connection fails the request at once: the job's `retries` decide.
        configuration.connectionPool.retryConnectionEstablishment = false
        return AsyncHTTPClient.HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    public init() {}

    public func send(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        var status: Int?
        do {
            let deadline = Self.deadline(request)
            let response = try await Self.execute(request, deadline: deadline, compressed: true)
            status = Int(response.status.code)
            try Self.checkLength(response, request)
            let maxBytes = request.maxBytes
            let buffer = try await Self.before(deadline) { try await response.body.collect(upTo: maxBytes) }
            return HTTPResponse(status: Int(response.status.code), headers: Self.headers(response), body: Array(buffer: buffer))
        } catch {
            throw Self.failure(error, request, status: status, what: "body")
        }
    }

    /// What a download wrote.
    public struct Download: Sendable {
        public let status: Int
        /// Header names lowercased.
        public let headers: [String: String]
        /// Bytes written; 0 unless the status is 2xx.
        public let size: Int
        /// SHA-256 of the bytes written, lowercase hex; empty unless the status is 2xx.
        public let sha256: String
    }

    /// Streams a 2xx response body into `descriptor` (a file open for writing), hashing
    /// it on the way; any other status writes nothing. A body over `request.maxBytes` is
    /// abandoned, and so is one from which nothing arrives for `request.timeout`. What was
    /// written before an error is the caller's to remove.
    public func download(_ request: HTTPRequest, to descriptor: Int32) async throws(HTTPError) -> Download {
        var status: Int?
        do {
            let response = try await Self.execute(request, deadline: Self.deadline(request), compressed: false)
            status = Int(response.status.code)
            let headers = Self.headers(response)
            guard (200..<300).contains(Int(response.status.code)) else {
                await Self.discard(response, before: Self.deadline(request))
                return Download(status: Int(response.status.code), headers: headers, size: 0, sha256: "")
            }
            try Self.checkLength(response, request)
            let maxBytes = request.maxBytes
            let (size, sha256) = try await Self.untilIdle(for: request.timeout) { heartbeat in
                var hash = Crypto.SHA256()
                var size = 0
                for try await chunk in response.body {
                    heartbeat.beat()
                    size += chunk.readableBytes
                    if size > maxBytes { throw NIOTooManyBytesError(maxBytes: maxBytes) }
                    try chunk.withUnsafeReadableBytes { bytes in
                        hash.update(bufferPointer: bytes)
                        try Self.write(bytes, to: descriptor)
                    }
                }
                return (size, Hex.string(hash.finalize()))
            }
            return Download(status: Int(response.status.code), headers: headers, size: size, sha256: sha256)
        } catch {
            throw Self.failure(error, request, status: status, what: "file")
        }
    }

    /// A local write that failed during a download: not the server's fault, not retried.
    private struct WriteFailure: Error {
        let reason: String
    }

    private static func write(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) throws {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let written = Foundation.write(descriptor, base + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw WriteFailure(reason: String(cString: strerror(errno)))
            }
            offset += written
        }
    }

    /// The body of a response took longer than the request's timeout.
    private struct TimedOut: Error {}

    /// Runs `work`, failing with `TimedOut` at `deadline`. The client library's own
    /// deadline ends when the response's head arrives; this one covers its body.
    private static func before<T: Sendable>(_ deadline: NIODeadline,
                                            _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(max(0, (deadline - .now()).nanoseconds)))
                return nil
            }
            defer { group.cancelAll() }
            guard let result = try await group.next() ?? nil else { throw TimedOut() }
            return result
        }
    }

    /// Reads an unwanted body (a redirect's, an error page's), so that its connection can
    /// serve the next request; gives up on one that is large or slow.
    private static func discard(_ response: HTTPClientResponse, before deadline: NIODeadline) async {
        _ = try? await before(deadline) { try await response.body.collect(upTo: 1 << 20) }
    }

    /// When the last piece of a body arrived.
    final class Heartbeat: Sendable {
        private let start = ContinuousClock.now
        /// Nanoseconds from `start` to the last beat.
        private let last = Atomic<Int>(0)

        func beat() { last.store(Self.nanoseconds(ContinuousClock.now - start), ordering: .relaxed) }
        var lastBeat: ContinuousClock.Instant { start + .nanoseconds(last.load(ordering: .relaxed)) }

        private static func nanoseconds(_ duration: Duration) -> Int {
            let (seconds, attoseconds) = duration.components
            return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        }
    }

    /// Runs `work`, failing with `TimedOut` once `seconds` pass without a heartbeat.
    private static func untilIdle<T: Sendable>(for seconds: Double,
                                               _ work: @escaping @Sendable (Heartbeat) async throws -> T) async throws -> T {
        let heartbeat = Heartbeat()
        let idle = Duration.seconds(seconds)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await work(heartbeat) }
            group.addTask {
                while true {
                    let due = heartbeat.lastBeat + idle
                    if ContinuousClock.now >= due { return nil }
                    try await Task.sleep(until: due, clock: .continuous)
                }
            }
            defer { group.cancelAll() }
            guard let result = try await group.next() ?? nil else { throw TimedOut() }
            return result
        }
    }

    /// A redirect that is not followed.
    private struct RedirectFailure: Error {
        let reason: String
    }

    static let maxRedirects = 10

    /// Sends the request and follows up to 10 redirects. A hop to another origin (scheme,
    /// host and port; http to https on the same host counts as the same) takes no header
    /// that holds a secret, and a body that holds one is not sent there at all. 303, and
    /// 301 or 302 after a POST, go on as a GET without a body, as browsers do.
    private static func execute(_ request: HTTPRequest, deadline: NIODeadline, compressed: Bool) async throws -> HTTPClientResponse {
        var url = request.url.real
        var method = request.method
        var headers = request.headers
        var body = request.body
        var visited: Set<String> = [url]
        for _ in 0...maxRedirects {
            var outgoing = try outgoing(url: url, method: method, headers: headers, body: body, shownURL: request.url)
            if compressed, !outgoing.headers.contains(name: "accept-encoding") {
                outgoing.headers.add(name: "accept-encoding", value: "gzip, deflate")
            }
            let response = try await shared.execute(outgoing, deadline: deadline)
            let code = Int(response.status.code)
            guard [301, 302, 303, 307, 308].contains(code), let location = response.headers.first(name: "location") else {
                return response
            }
            await discard(response, before: deadline)
            guard let next = URL(string: location, relativeTo: URL(string: url))?.absoluteURL.absoluteString,
                  Self.isHTTP(next) else {
                throw RedirectFailure(reason: "HTTP \(code) redirect to a location that is not an http(s) URL")
            }
            guard visited.insert(next).inserted else { throw RedirectFailure(reason: "redirect loop") }
            if code == 303 || (code == 301 || code == 302) && method == "POST" {
                method = "GET"
                body = nil
            }
            if !sameOrigin(url, next) {
                headers = headers.filter { !$0.value.holdsSecret }
                if let sent = body, request.redactor.holdsSecret(String(decoding: sent, as: UTF8.self)) {
                    throw RedirectFailure(reason: "HTTP \(code) redirect to another host: a body holding a secret is not sent there")
                }
            }
            url = next
        }
        throw RedirectFailure(reason: "more than \(maxRedirects) redirects")
    }

    /// Only absolute http and https URLs are sent.
    public static func isHTTP(_ url: String) -> Bool {
        let lower = url.prefix(8).lowercased()
        return (lower.hasPrefix("http://") || lower.hasPrefix("https://")) && URL(string: url)?.host != nil
    }

    /// Same scheme, host and port, or an upgrade from http to https on the same host.
    static func sameOrigin(_ from: String, _ to: String) -> Bool {
        guard let a = URLComponents(string: from), let b = URLComponents(string: to),
              let schemeA = a.scheme?.lowercased(), let schemeB = b.scheme?.lowercased() else { return false }
        func port(_ c: URLComponents, _ scheme: String) -> Int? { c.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil) }
        guard a.host?.lowercased() == b.host?.lowercased() else { return false }
        if schemeA == schemeB { return port(a, schemeA) == port(b, schemeB) }
        return schemeA == "http" && schemeB == "https" && (a.port == nil || a.port == 80) && (b.port == nil || b.port == 443)
    }

    /// The request as the client library takes it; only http(s) URLs are sent.
    private static func outgoing(url: String, method: String, headers: [Header], body: [UInt8]?,
                                 shownURL: RedactedURL) throws(HTTPError) -> HTTPClientRequest {
        guard Self.isHTTP(url) else {
            throw HTTPError.invalidURL(shownURL)
        }
        var outgoing = HTTPClientRequest(url: url)
        outgoing.method = HTTPMethod(rawValue: method)
        for header in headers {
            outgoing.headers.add(name: header.name, value: header.value.real)
        }
        if !outgoing.headers.contains(name: "user-agent") {
            outgoing.headers.add(name: "user-agent", value: "mirror")
        }
        if let body {
            outgoing.body = .bytes(body)
            if !outgoing.headers.contains(name: "content-type") {
                outgoing.headers.add(name: "content-type", value: "application/json")
            }
        }
        return outgoing
    }

    private static func deadline(_ request: HTTPRequest) -> NIODeadline {
        NIODeadline.now() + .milliseconds(Int64(request.timeout * 1000))
    }

    /// An announced length over the cap fails before any of the body is read.
    private static func checkLength(_ response: HTTPClientResponse, _ request: HTTPRequest) throws {
        if let length = response.headers.first(name: "content-length").flatMap(Int.init), length > request.maxBytes {
            throw NIOTooManyBytesError(maxBytes: request.maxBytes)
        }
    }

    /// Header names lowercased; repeated headers joined with ", ".
    private static func headers(_ response: HTTPClientResponse) -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in response.headers {
            let key = name.lowercased()
            headers[key] = headers[key].map { $0 + ", " + value } ?? value
        }
        return headers
    }

    private static func failure(_ error: any Error, _ request: HTTPRequest, status: Int?, what: String) -> HTTPError {
        switch error {
        case is NIOTooManyBytesError: return .tooLarge(request.url, cap: request.maxBytes, what: what, status: status)
        case let failure as WriteFailure: return .writeFailed(request.url, failure.reason, status: status)
        case let redirect as RedirectFailure: return .redirect(request.url, redirect.reason, status: status)
        case is TimedOut: return .timedOut(request.url, status: status)
        default: return .classify(error, url: request.url, status: status)
        }
    }
}

/// Byte counts as job files write them (`64MB`) and as messages print them.
public enum ByteSize {
    public static func text(_ bytes: Int) -> String {
        for (unit, size) in [("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)] where bytes >= size && bytes % size == 0 {
            return "\(bytes / size) \(unit)"
        }
        return "\(bytes) bytes"
    }

    /// `512 B`, `85.3 KB`, `3.1 MB`: for progress, not for limits.
    public static func approximate(_ bytes: Int) -> String {
        for (unit, size) in [("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)] where bytes >= size {
            let value = Double(bytes) / Double(size)
            return "\((value * 10).rounded() / 10) \(unit)"
        }
        return "\(bytes) B"
    }
}
