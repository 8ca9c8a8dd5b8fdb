import Hummingbird
import HummingbirdCore

/// Refuses, with 403, a request whose `Host` names another machine, when the server listens
/// on a loopback address: a web page whose name was made to point to 127.0.0.1 (DNS
/// rebinding) gets nothing from the mirror.
struct RebindingGuard<Context: RequestContext>: RouterMiddleware {
    /// The address the server listens on.
    let bind: String
    /// Whether `bind` is a loopback address, judged once.
    private let loopback: Bool
    /// The hosts a request on loopback may name, lowercased.
    private let hosts: Set<String>

    init(bind: String) {
        self.bind = bind
        loopback = MirrorServer.isLoopback(bind)
        hosts = ["localhost", "127.0.0.1", "::1", bind.lowercased()]
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard allows(host: request.head.authority) else {
            throw HTTPError(.forbidden, message: "this server answers requests for \(bind) and localhost only")
        }
        return try await next(request, context)
    }

    /// Whether a request with this `Host` is answered: any is, off loopback; on it, only
    /// `localhost`, `127.0.0.1`, `::1` and the bound address (with any port), or none at all.
    func allows(host authority: String?) -> Bool {
        guard loopback else { return true }
        guard let authority else { return true }
        var host = Substring(authority)
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            host = host[..<colon]
        }
        return hosts.contains(host.lowercased())
    }
}
