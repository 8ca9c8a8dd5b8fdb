import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

public struct HTTPRequest: Sendable {
    public var method: String
    public var url: RedactedURL
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?
    /// Seconds.
    public var timeout: Double

    public init(method: String, url: RedactedURL, headers: [(name: String, value: String)], body: [UInt8]?, timeout: Double) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

public struct HTTPResponse: Sendable {
    public let status: Int
    /// Header names lowercased.
    public let headers: [String: String]
    public let body: Data
}

/// A request that got no HTTP response at all.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public let url: RedactedURL
    public let reason: String
    public var description: String { reason }
}

/// Every HTTP exchange of the program goes through this type, so the client library
/// can be swapped without touching the walk.
public final class HTTPClient: Sendable {
    private let session: URLSession

    public init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpMaximumConnectionsPerHost = 16
        session = URLSession(configuration: configuration)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    public func send(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        guard let url = URL(string: request.url.real) else {
            throw HTTPError(url: request.url, reason: "not a valid URL")
        }
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        for header in request.headers {
            urlRequest.addValue(header.value, forHTTPHeaderField: header.name)
        }
        if let body = request.body {
            urlRequest.httpBody = Data(body)
            if !request.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
                urlRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: urlRequest)
        } catch {
            throw HTTPError(url: request.url, reason: Self.describe(error, url: request.url))
        }
        guard let http = response as? HTTPURLResponse else {
            throw HTTPError(url: request.url, reason: "no HTTP response")
        }
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let value = value as? String {
                headers[key.lowercased()] = value
            }
        }
        return HTTPResponse(status: http.statusCode, headers: headers, body: data)
    }

    /// A short reason that never quotes the URL (the caller prints the redacted one).
    static func describe(_ error: any Error, url: RedactedURL) -> String {
        if let urlError = error as? URLError {
            switch urlError.code {
            case .timedOut: return "timed out"
            case .cannotConnectToHost: return "connection refused"
            case .networkConnectionLost: return "connection lost"
            case .cannotFindHost, .dnsLookupFailed: return "host not found"
            case .badServerResponse: return "bad server response"
            case .secureConnectionFailed: return "TLS handshake failed"
            default: return "network error \(urlError.code.rawValue)"
            }
        }
        return "network error"
    }
}
