public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
import Synchronization

/// Answers an app's own `URLSession` requests to an API from a replica, so that its
/// networking code stays as it is. Register which replica answers which origin of the API,
/// with a policy, and put the class first in the session's protocol classes:
///
/// ```swift
/// ReplicaURLProtocol.register(replica, for: URL(string: "https://api.example.com")!, policy: .cacheElseNetwork)
/// let configuration = URLSessionConfiguration.default
/// configuration.protocolClasses = [ReplicaURLProtocol.self] + (configuration.protocolClasses ?? [])
/// let session = URLSession(configuration: configuration)
/// ```
///
/// A request to an origin no replica is registered for is not taken: the session's other
/// protocols send it. An answer from the replica is `response(for:)`'s (a page as
/// `mirror serve` gives it) or, for the URL a file was downloaded from, `fileResponse(for:)`'s
/// (the file's bytes and content type), and carries `X-Mirror-Replica: <generation>`; an answer from the
/// network is the API's, passed through as it came (status, headers, body), without it.
/// The network is reached through a session of its own that does not hold this class.
public final class ReplicaURLProtocol: URLProtocol {
    /// When the replica answers, as the request caches of `URLRequest.CachePolicy` say it.
    public enum Policy: Sendable, Equatable {
        /// The replica's answer, else a `504 Gateway Timeout` (as HTTP's `only-if-cached`
        /// gives it): the network is never asked. A replica that cannot be read fails the
        /// request with its `ReplicaError`.
        case cacheOnly
        /// The replica's answer, else the network's.
        case cacheElseNetwork
        /// The network's answer, whatever its status; the replica's only when the network
        /// cannot be reached (a transport error: connection refused, a timeout, a name that
        /// does not resolve).
        case networkElseCache
        /// The replica's answer while its generation is younger than this many seconds (its
        /// age counted from `Replica.createdAt`), else the network's; when the network
        /// cannot be reached, the replica's answer whatever its age.
        case maxAge(TimeInterval)
    }

    private struct Route: Sendable {
        let replica: Replica
        let policy: Policy
    }

    private static let routes = Mutex<[String: Route]>([:])

    /// The session that sends requests on to the network: without this class, and without a
    /// cache of its own (the replica is the app's cache).
    private static let network: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = configuration.protocolClasses?.filter { $0 != ReplicaURLProtocol.self }
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }()

    /// Answers requests to `origin` (`scheme://host[:port]`; a path it has is not looked at)
    /// from `replica`, as `policy` says, in place of what was registered for it before. An
    /// origin that is not `http://` or `https://` registers nothing.
    public static func register(_ replica: Replica, for origin: URL, policy: Policy) {
        guard let key = key(of: origin) else { return }
        routes.withLock { $0[key] = Route(replica: replica, policy: policy) }
    }

    /// Leaves requests to `origin` to the session's other protocols again.
    public static func unregister(_ origin: URL) {
        guard let key = key(of: origin) else { return }
        routes.withLock { _ = $0.removeValue(forKey: key) }
    }

    /// `scheme://host:port`, the port written even when it is the scheme's default; nil
    /// for a URL that is not `http(s)://`.
    private static func key(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host?.lowercased() else { return nil }
        return "\(scheme)://\(host):\(url.port ?? (scheme == "https" ? 443 : 80))"
    }

    private static func route(for url: URL?) -> Route? {
        guard let url, let key = key(of: url) else { return nil }
        return routes.withLock { $0[key] }
    }

    override public class func canInit(with request: URLRequest) -> Bool {
        route(for: request.url) != nil
    }

    override public class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    /// The task answering, cancelled by `stopLoading`.
    private let loading = Loading()

    override public func startLoading() {
        guard let route = Self.route(for: request.url) else {
            client?.urlProtocol(self, didFailWithError: URLError(.unsupportedURL))
            return
        }
        // URLProtocol is not Sendable, yet Foundation takes its client's calls from any thread,
        // as the network's answer arrives on one of its own; the protocol holds nothing that
        // changes but `loading`, behind its lock. So its task refers to it as the client does.
        nonisolated(unsafe) let answering = self
        let task = Task { await answering.answer(route) }
        loading.start(task)
    }

    override public func stopLoading() {
        loading.stop()
    }

    /// What the policy says to send.
    private func answer(_ route: Route) async {
        let replica = route.replica
        switch route.policy {
        case .cacheOnly:
            do {
                if let answer = try Self.answer(of: replica, to: request) {
                    send(answer)
                } else {
                    sendMiss()
                }
            } catch {
                client?.urlProtocol(self, didFailWithError: error)
            }
        case .cacheElseNetwork:
            if let answer = try? Self.answer(of: replica, to: request) {
                send(answer)
            } else {
                await sendNetwork(else: nil)
            }
        case .networkElseCache:
            await sendNetwork(else: replica)
        case let .maxAge(seconds):
            if let created = replica.createdAt, Date().timeIntervalSince(created) < seconds,
               let answer = try? Self.answer(of: replica, to: request) {
                send(answer)
            } else {
                await sendNetwork(else: replica)
            }
        }
    }

    /// The replica's answer: the page, else the downloaded file, that it holds for `request`.
    private static func answer(of replica: Replica, to request: URLRequest) throws -> ReplicaResponse? {
        try replica.response(for: request) ?? replica.fileResponse(for: request)
    }

    /// The network's answer; when it cannot be reached, `fallback`'s, if it has one.
    private func sendNetwork(else fallback: Replica?) async {
        do {
            let (body, response) = try await Self.network.data(for: request)
            guard !Task.isCancelled else { return }
            client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            if !body.isEmpty { client?.urlProtocol(self, didLoad: body) }
            client?.urlProtocolDidFinishLoading(self)
        } catch {
            guard !Task.isCancelled else { return }
            if let fallback, let answer = try? Self.answer(of: fallback, to: request) {
                send(answer)
            } else {
                client?.urlProtocol(self, didFailWithError: error)
            }
        }
    }

    private func send(_ answer: ReplicaResponse) {
        client?.urlProtocol(self, didReceive: answer.httpResponse, cacheStoragePolicy: .notAllowed)
        if !answer.body.isEmpty { client?.urlProtocol(self, didLoad: answer.body) }
        client?.urlProtocolDidFinishLoading(self)
    }

    /// `cacheOnly`'s answer when the replica holds none.
    private func sendMiss() {
        let url = request.url ?? URL(fileURLWithPath: "/")
        let response = HTTPURLResponse(url: url, statusCode: 504, httpVersion: "HTTP/1.1",
                                       headerFields: ["Content-Type": "text/plain; charset=utf-8"])!
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client?.urlProtocol(self, didLoad: Data(Self.missText.utf8))
        client?.urlProtocolDidFinishLoading(self)
    }

    /// The body of `cacheOnly`'s 504.
    public static let missText = "the replica holds no answer to this request, and its policy (cacheOnly) never asks the network: "
        + "sync the replica, or register it with a policy that does\n"
}

/// The task of one request's answer, and whether it was stopped before it began.
private final class Loading: Sendable {
    private let state = Mutex<(task: Task<Void, Never>?, stopped: Bool)>((nil, false))

    func start(_ task: Task<Void, Never>) {
        let stopped = state.withLock { state in
            state.task = task
            return state.stopped
        }
        if stopped { task.cancel() }
    }

    func stop() {
        let task = state.withLock { state in
            state.stopped = true
            return state.task
        }
        task?.cancel()
    }
}
