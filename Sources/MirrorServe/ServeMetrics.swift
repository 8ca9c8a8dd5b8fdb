import HTTPTypes
import Hummingbird
import HummingbirdCore
import Metrics
import NIOCore

/// What `mirror serve --metrics` counts through swift-metrics, by route class: each answer by
/// status class, its duration, and the body's bytes sent (files included; none for HEAD).
/// The handles are made once, when the server starts, for every route class and status
/// class, so an answer only indexes an array and increments. Labels stay few: a route class
/// and a status class, never a URL or an id. The library never picks a backend: the
/// executable bootstraps one and hands over `exposition`, which `/metrics` answers with.
package struct ServeMetrics: Sendable {
    /// What a request asked for, as the routes of `MirrorServer.router` tell it.
    enum Route: Int, CaseIterable, Sendable {
        /// A replayed page of the API, found or not.
        case page
        /// A downloaded file, `/_mirror/files/…`.
        case file
        /// The read API's tables and records, `/_mirror/tables[/<table>]`.
        case records
        /// The change feed, `/_mirror/changes/<table>`.
        case changes
        /// The status page at `/` and `/_mirror/status`.
        case status
        /// `/metrics` itself.
        case metrics
        /// Any other own path: none of the read API's.
        case other

        var name: String {
            switch self {
            case .page: "page"
            case .file: "file"
            case .records: "records"
            case .changes: "changes"
            case .status: "status"
            case .metrics: "metrics"
            case .other: "other"
            }
        }

        /// The route class of `uri`, read as the router reads it: segments split at `/`,
        /// empty ones left out.
        init(_ uri: URI) {
            let segments = uri.path.split(separator: "/")
            guard let first = segments.first else {
                self = (uri.query ?? "").isEmpty ? .status : .page
                return
            }
            guard first == "_mirror" else {
                self = segments.count == 1 && first == "metrics" ? .metrics : .page
                return
            }
            self = switch (segments.count, segments.count > 1 ? segments[1] : "") {
            case (2, "status"): .status
            case (2, "tables"), (3, "tables"): .records
            case (3, "changes"): .changes
            case (3..., "files"): .file
            default: .other
            }
        }
    }

    /// The handles of one route class.
    struct Handles: Sendable {
        /// By status class: 2xx, 3xx, 4xx, 5xx.
        let answers: [Counter]
        let duration: Metrics.Timer
        let sent: Counter

        /// An answer of `status`, started at `start`, is done with (see `CountedAnswers`).
        func answered(_ status: Int, since start: ContinuousClock.Instant) {
            // Serve answers 200 to 599 alone; a status outside is counted nowhere.
            if (200...599).contains(status) { answers[status / 100 - 2].increment() }
            duration.record(duration: ContinuousClock.now - start)
        }
    }

    /// The status classes an answer is counted under.
    static let statusClasses = ["2xx", "3xx", "4xx", "5xx"]

    /// The bounds of `mirror_serve_request_duration_seconds`' buckets, for a local server:
    /// half a millisecond to 5 seconds. The backend is told them (metrics have no buckets
    /// in swift-metrics' API).
    package static let durationBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
        .seconds(5),
    ]
    package static let durationLabel = "mirror_serve_request_duration_seconds"

    /// By `Route.rawValue`.
    private let handles: [Handles]
    /// The text exposition of every metric of the process (Prometheus' text format 0.0.4).
    let exposition: @Sendable () -> [UInt8]

    /// Makes every handle, through the metrics backend bootstrapped by then.
    package init(exposition: @escaping @Sendable () -> [UInt8]) {
        self.exposition = exposition
        handles = Route.allCases.map { route in
            let dimensions = [("route", route.name)]
            return Handles(
                answers: Self.statusClasses.map { statusClass in
                    Counter(label: "mirror_serve_requests_total", dimensions: dimensions + [("status_class", statusClass)])
                },
                duration: Metrics.Timer(label: Self.durationLabel, dimensions: dimensions),
                sent: Counter(label: "mirror_serve_sent_bytes_total", dimensions: dimensions))
        }
    }

    func handles(_ route: Route) -> Handles {
        handles[route.rawValue]
    }

    /// The answer to `GET /metrics`.
    var response: Response {
        Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                 body: ResponseBody(byteBuffer: ByteBuffer(bytes: exposition())))
    }
}

/// Counts every answer of the server (`ServeMetrics`), the refused ones included: the
/// first middleware, outside the one that writes errors. A page streamed in pieces has its
/// body wrapped to count the bytes it writes and to time it until they have been sent, as
/// Hummingbird's own `MetricsMiddleware` does with every body. A file's bytes may not pass
/// through the writer at all (`FileSends`): its length is counted, and it is timed, as it
/// is handed over. Any other answer
/// is one buffer, which Hummingbird sends with its head in one write only when its body is
/// not wrapped: it is counted, and timed, as it is handed over.
struct CountedAnswers<Context: RequestContext>: RouterMiddleware {
    let metrics: ServeMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let route = ServeMetrics.Route(request.uri)
        let handles = metrics.handles(route)
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            // What Hummingbird answers for it, a body of its own not counted.
            handles.answered(Int((error as? any HTTPResponseError)?.status.code ?? 500), since: start)
            throw error
        }
        let (body, status) = (response.body, response.status.code)
        // NIO sends no body in answer to HEAD, whatever is written.
        let sends = request.method != .head
        // The length its head gives: its body's, or that of the bytes of a file, or of a kept
        // page, that go to the connection with `sendfile`, past the writer (`FileSends`).
        let length = response.headers[.contentLength].flatMap { Int($0) } ?? body.contentLength
        // A body of known length but a file's is one buffer (a whole page, an answer of the
        // read API, an error), sent with its head in one write once returned, or a kept page
        // sent with `sendfile`: counted now, so that it stays one write.
        if route != .file, let length {
            if sends, length > 0 { handles.sent.increment(by: length) }
            handles.answered(status, since: start)
            return response
        }
        if route == .file, let length {
            response.body = ResponseBody(contentLength: length) { writer in
                defer { handles.answered(status, since: start) }
                try await body.write(writer)
                if sends, length > 0 { handles.sent.increment(by: length) }
            }
            return response
        }
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            defer { handles.answered(status, since: start) }
            try await sends ? body.write(writer.counted(in: handles.sent)) : body.write(writer)
        }
        return response
    }
}

/// A body writer that counts the bytes it passes on.
private struct SentBytes<Parent: ResponseBodyWriter>: ResponseBodyWriter {
    var parent: Parent
    let sent: Counter

    mutating func write(_ buffer: ByteBuffer) async throws {
        try await parent.write(buffer)
        if buffer.readableBytes > 0 { sent.increment(by: buffer.readableBytes) }
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        try await parent.finish(trailingHeaders)
    }
}

extension ResponseBodyWriter {
    /// This writer, counting what it writes in `sent`.
    fileprivate consuming func counted(in sent: Counter) -> some ResponseBodyWriter {
        SentBytes(parent: self, sent: sent)
    }
}
