import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

public struct HTTPRequest: Sendable {
    public var method: String
    public var url: RedactedURL
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?
    /// Seconds, for the whole exchange.
    public var timeout: Double
    /// A response body larger than this is abandoned.
    public var maxBytes: Int

    public init(method: String, url: RedactedURL, headers: [(name: String, value: String)], body: [UInt8]?,
                timeout: Double, maxBytes: Int) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maxBytes = maxBytes
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

/// A request that got no complete HTTP response.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// Worth another attempt: refused, reset, timed out, cut short.
        case transient
        /// The body passed the size cap; asking again would not help.
        case tooLarge
        /// The request cannot be made at all (bad URL, unsupported scheme).
        case invalid
    }

    public let url: RedactedURL
    public let kind: Kind
    public let reason: String
    /// The status line, when one arrived before the failure.
    public let status: Int?
    public var description: String { reason }
}

/// Every HTTP exchange of the program goes through this type, so the client library
/// can be swapped without touching the walk.
public final class HTTPClient: Sendable {
    /// One connection pool for the process: a static lives as long as the program, so
    /// it never needs shutting down.
    private static let shared: AsyncHTTPClient.HTTPClient = {
        var configuration = AsyncHTTPClient.HTTPClient.Configuration(
            redirectConfiguration: .follow(max: 10, allowCycles: false),
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
        let lower = request.url.real.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), URL(string: request.url.real) != nil else {
            throw HTTPError(url: request.url, kind: .invalid, reason: "not a valid http(s) URL", status: nil)
        }
        var outgoing = HTTPClientRequest(url: request.url.real)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for header in request.headers {
            outgoing.headers.add(name: header.name, value: header.value)
        }
        if !outgoing.headers.contains(name: "accept-encoding") {
            outgoing.headers.add(name: "accept-encoding", value: "gzip, deflate")
        }
        if !outgoing.headers.contains(name: "user-agent") {
            outgoing.headers.add(name: "user-agent", value: "mirror")
        }
        if let body = request.body {
            outgoing.body = .bytes(body)
            if !outgoing.headers.contains(name: "content-type") {
                outgoing.headers.add(name: "content-type", value: "application/json")
            }
        }
        let deadline = NIODeadline.now() + .milliseconds(Int64(request.timeout * 1000))
        var status: Int?
        do {
            let response = try await Self.shared.execute(outgoing, deadline: deadline)
            status = Int(response.status.code)
            if let length = response.headers.first(name: "content-length").flatMap(Int.init), length > request.maxBytes {
                throw NIOTooManyBytesError(maxBytes: request.maxBytes)
            }
            let buffer = try await response.body.collect(upTo: request.maxBytes)
            var headers: [String: String] = [:]
            for (name, value) in response.headers {
                let key = name.lowercased()
                headers[key] = headers[key].map { $0 + ", " + value } ?? value
            }
            return HTTPResponse(status: Int(response.status.code), headers: headers, body: Array(buffer: buffer))
        } catch is NIOTooManyBytesError {
            throw HTTPError(url: request.url, kind: .tooLarge,
                            reason: "body over the \(ByteSize.text(request.maxBytes)) cap", status: status)
        } catch {
            throw HTTPError(url: request.url, kind: .transient, reason: Self.describe(error, gotHead: status != nil), status: status)
        }
    }

    /// A short reason that never quotes the URL (the caller prints the redacted one).
    static func describe(_ error: any Error, gotHead: Bool) -> String {
        if let error = error as? HTTPClientError {
            if [.deadlineExceeded, .readTimeout, .writeTimeout].contains(error) { return "timed out" }
            if [.connectTimeout, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout].contains(error) {
                return "connect timed out"
            }
            if error == .remoteConnectionClosed || error == .bodyLengthMismatch {
                return gotHead ? "body cut short: connection closed early" : "connection closed without a response"
            }
            if error == .redirectLimitReached || error == .redirectCycleDetected { return "too many redirects" }
            if error == .cancelled { return "cancelled" }
            return "network error (\(error))"
        }
        if let error = error as? HTTPParserError {
            if error == .invalidEOFState { return gotHead ? "body cut short: connection closed early" : "connection closed without a response" }
            return gotHead ? "malformed HTTP body (\(error))" : "malformed HTTP response (\(error))"
        }
        let text = String(describing: error)
        if text.contains("connectionRefused") || text.contains("Connection refused") { return "connection refused" }
        if text.contains("connectionReset") || text.contains("Connection reset") { return "connection reset" }
        if text.contains("NIOConnectionError") || text.contains("NXDOMAIN") || text.contains("resolution") {
            return "cannot connect (host not found or unreachable)"
        }
        if text.contains("SSL") || text.contains("TLS") || text.contains("certificate") { return "TLS handshake failed" }
        if text.contains("CancellationError") || error is CancellationError { return "cancelled" }
        return gotHead ? "body cut short (\(text))" : "network error (\(text))"
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
