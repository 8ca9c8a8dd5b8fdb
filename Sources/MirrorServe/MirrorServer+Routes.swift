import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import MirrorDownload
import MirrorReplay
import NIOCore
import NIOPosix

extension MirrorServer {
    /// The server's own paths: `/` without a query (the status page) and every path whose
    /// first segment is `_mirror` (the read API, whatever the API has there). They take GET
    /// and HEAD; every other path is one of the API's and takes POST too. Segments are
    /// counted as the router counts them, empty ones left out.
    static func isOwn(_ uri: URI) -> Bool {
        let path = uri.path.utf8
        let slash = UInt8(ascii: "/")
        guard let start = path.firstIndex(where: { $0 != slash }) else { return (uri.query ?? "").isEmpty }
        let first = path[start...].prefix { $0 != slash }
        return first.elementsEqual("_mirror".utf8)
    }

    /// The routes, behind what every request passes first: its count (with `metrics`),
    /// errors written as mirror's JSON, the Host check, the device token (when `tokens` are asked for) and the methods a path
    /// takes. A token whose scope is not every account and table reads the records and
    /// changes of its accounts and tables, and the API's pages that hold them, alone: the
    /// rest, whether it exists or not, is `DeviceAuthorization.refused`.
    static func router(api: ReadAPI, files: ServedFiles, pages: ReplayedPages, address: ServerAddress,
                       tokens: DeviceTokenFile? = nil, metrics: ServeMetrics? = nil, sends: FileSends? = nil) -> Router<ServeContext> {
        typealias Handler = @Sendable (Request, ServeContext) async throws -> Response
        let router = Router(context: ServeContext.self)
        if let metrics { router.add(middleware: CountedAnswers(metrics: metrics)) }
        router.add(middleware: JSONErrors())
        router.add(middleware: RebindingGuard(bind: address.bind))
        if let tokens { router.add(middleware: DeviceAuthorization(file: tokens)) }
        router.add(middleware: AllowedMethods(metrics: metrics != nil))
        /// Refuses a request whose token does not read every account and table.
        @Sendable func whole(_ context: ServeContext) throws {
            if let device = context.device, !device.isWhole { throw DeviceAuthorization.refused }
        }
        /// Refuses a request whose token does not read `account` (nil: every one) of `table`.
        @Sendable func permitted(_ context: ServeContext, table: String, account: String?) throws {
            if let device = context.device, !device.permits(table: table, account: account) { throw DeviceAuthorization.refused }
        }
        func on(_ path: RouterPath, _ methods: [HTTPRequest.Method] = [.get, .head], use handler: @escaping Handler) {
            for method in methods { router.on(path, method: method, use: handler) }
        }
        // A replayed page, kept or assembled, is shown as a downloaded file is, never run.
        let replay: Handler = { request, context in
            try await shownNeverRun.handle(request, context: context) { request, context in
                try await pages.response(to: request, origin: address.origin(asked: request.head.authority), channel: context.channel, sends: sends,
                                         device: context.device)
            }
        }
        let unknown: Handler = { request, context in
            try whole(context)
            throw noSuchPath(request)
        }

        // `/` with a query is one of the API's URLs.
        on("/", [.get, .head, .post]) { request, context in
            guard isOwn(request.uri) else { return try await replay(request, context) }
            try whole(context)
            return try await blocking { try api.statusPage() }.response
        }
        on("/_mirror/status") { _, context in
            try whole(context)
            return try await blocking { try api.status() }.response
        }
        on("/_mirror/tables") { _, context in
            try whole(context)
            return try await blocking { try api.tables() }.response
        }
        on("/_mirror/tables/:table") { request, context in
            let table = try name(context.parameters.get("table"), in: request)
            let (query, path) = (parameters(of: request), request.uri.path)
            try permitted(context, table: table, account: query["account"])
            return try await blocking { try api.records(table: table, query: query, path: path) }.response
        }
        on("/_mirror/changes/:table") { request, context in
            let table = try name(context.parameters.get("table"), in: request)
            let query = parameters(of: request)
            try permitted(context, table: table, account: query["account"])
            return try await blocking { try api.changes(table: table, query: query) }.response
        }
        // The counts of every route, the API's path of that name no longer replayed.
        if let metrics {
            on("/metrics") { _, context in
                try whole(context)
                return metrics.response
            }
        }
        let downloads = router.group("/_mirror/files").add(middleware: shownNeverRun)
        // A downloaded file may be shared by the records of several accounts and tables.
        let file: Handler = { request, context in
            try whole(context)
            // The rest of the path as sent, percent-decoded: `getCatchAll()` would drop an
            // empty segment, and a path with one is no file's.
            guard let path = context.parameters.get(String(Parameters.recursiveCaptureKey)).flatMap(percentDecoded) else {
                throw noSuchPath(request)
            }
            return try await files.response(to: FileNaming.folder + "/" + path, request: request, channel: context.channel)
        }
        for method in [HTTPRequest.Method.get, .head] { downloads.on("**", method: method, use: file) }
        // What no route above names under `/_mirror`: the router does not fall back from a
        // segment that leads on (`files` in `/_mirror/files`) to the wildcard beside it.
        for path: RouterPath in ["/_mirror", "/_mirror/changes", "/_mirror/files", "/_mirror/**"] {
            on(path, use: unknown)
        }
        on("/**", [.get, .head, .post], use: replay)
        return router
    }

    /// What the API sent is shown, never run: `X-Content-Type-Options: nosniff` and
    /// `Content-Security-Policy: sandbox` on every answer of a downloaded file or a replayed
    /// page, so an HTML or SVG file, or a page the API labelled `text/html` with a record's
    /// `<script>` in it, cannot reach the read API from this origin.
    static let shownNeverRun = ShownNeverRun()

    /// The fields `shownNeverRun` adds, which `KeptAnswersOnLoop` adds too.
    static let shownNeverRunFields: HTTPFields = [
        HTTPField.Name("Content-Security-Policy")!: "sandbox",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
    ]

    /// Adds `shownNeverRunFields` to every answer.
    struct ShownNeverRun: RouterMiddleware {
        func handle(_ request: Request, context: ServeContext,
                    next: (Request, ServeContext) async throws -> Response) async throws -> Response {
            var response = try await next(request, context)
            response.headers.append(contentsOf: shownNeverRunFields)
            return response
        }
    }

    /// 404 for an own path the read API does not have.
    private static func noSuchPath(_ request: Request) -> HTTPError {
        HTTPError(.notFound, message: "no such path: '\(request.uri.path)'")
    }

    /// A table's name from its path segment, percent-decoded; one that decodes to more than
    /// one segment is no path of the read API.
    private static func name(_ segment: String?, in request: Request) throws -> String {
        guard let name = segment.flatMap(percentDecoded), !name.contains("/") else { throw noSuchPath(request) }
        return name
    }

    /// `text` percent-decoded; nil when a `%` starts no escape or the bytes are no UTF-8.
    /// Foundation is asked only when there is a `%`: most paths have none.
    static func percentDecoded(_ text: String) -> String? {
        text.utf8.contains(UInt8(ascii: "%")) ? text.removingPercentEncoding : text
    }

    /// The request's query parameters, their values percent-decoded.
    private static func parameters(of request: Request) -> [String: String] {
        var parameters: [String: String] = [:]
        for (key, value) in request.uri.queryParameters { parameters[String(key)] = String(value) }
        return parameters
    }

    /// When `request` arrived (`CommitWatcher.now()`), as `RequestMarker` wrote in its head.
    static func arrival(of request: Request) -> UInt64? {
        arrival(in: request.headers)
    }

    /// The arrival `RequestMarker` wrote in a request's head `fields`.
    static func arrival(in fields: HTTPFields) -> UInt64? {
        fields.first { $0.name == RequestMarker.arrivalField }.flatMap { UInt64($0.value) }
    }

    /// SQLite's and the file system's blocking work, off the tasks that serve connections.
    static func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(work)
    }

    /// Returns once the connection has taken what was written to `writer` and will take
    /// more. A write reaches the connection's event loop `loop` later, in order: once a task
    /// submitted there has run, the writes before it have, and the writer knows whether the
    /// connection is full; then an empty write (NIO frames no empty chunk: it sends nothing)
    /// waits while it is. Without the hop, a busy event loop would let a response read its
    /// next pieces before the last reached the connection, and hold them all.
    static func taken(by writer: inout any ResponseBodyWriter, on loop: any EventLoop) async throws {
        try await loop.submit {}.get()
        try await writer.write(ByteBuffer())
    }
}
