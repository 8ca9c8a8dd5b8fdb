import HTTPTypes
import Hummingbird
import HummingbirdCore

/// Refuses, with 405 and `Allow`, a method a path does not take: the server's own paths
/// (see `MirrorServer.isOwn`), and `/metrics` when it is served, take GET and HEAD, the API's
/// URLs GET, HEAD and POST.
struct AllowedMethods<Context: RequestContext>: RouterMiddleware {
    /// Whether `/metrics` is served.
    var metrics = false

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let own = MirrorServer.isOwn(request.uri) || (metrics && ServeMetrics.Route(request.uri) == .metrics)
        let allowed: [HTTPRequest.Method] = own ? [.get, .head] : [.get, .head, .post]
        guard allowed.contains(request.method) else {
            let names = allowed.map(\.rawValue).joined(separator: ", ")
            throw HTTPError(.methodNotAllowed, headers: [.allow: names], message: "only \(names) are served here")
        }
        return try await next(request, context)
    }
}
