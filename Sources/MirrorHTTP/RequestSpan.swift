import Instrumentation
import MirrorModel
import Tracing

/// One attempt of a request, as OpenTelemetry's conventions for HTTP clients name it: a client
/// span called by its method, with the method, the URL as logs show it (secrets masked), its
/// host, the job, how many times it was sent before, and the status that came. While the
/// attempt runs the span is the task's context, so a request that propagates its trace
/// (`propagate_trace`) names this span as the server's parent. With no tracer bootstrapped it
/// is swift-distributed-tracing's no-op span: nothing is set or kept.
struct RequestSpan {
    private let span: any Span

    init(method: String, url: RedactedURL, job: String, resent: Int) {
        span = startSpan(method, ofKind: .client)
        guard span.isRecording else { return }
        span.attributes["http.request.method"] = method
        span.attributes["url.full"] = url.description
        let host = url.host
        if let colon = host.lastIndex(of: ":"), let port = Int(host[host.index(after: colon)...]) {
            span.attributes["server.address"] = String(host[..<colon])
            span.attributes["server.port"] = port
        }
        span.attributes["mirror.job"] = job
        if resent > 0 { span.attributes["http.request.resend_count"] = resent }
    }

    /// Runs `exchange` with this span as the task's context.
    func around<Response>(_ exchange: () async throws(HTTPError) -> Response) async -> Result<Response, HTTPError> {
        await InstrumentationContext.withValue(span.context) {
            do throws(HTTPError) {
                return .success(try await exchange())
            } catch {
                return .failure(error)
            }
        }
    }

    /// Ends the span with the status that came (nil: none), an error status for a 4xx, a 5xx
    /// or no answer at all.
    func end(status: Int?, failure: HTTPError?) {
        if span.isRecording {
            if let status { span.attributes["http.response.status_code"] = status }
            if let status, status >= 400 {
                span.attributes["error.type"] = String(status)
                span.setStatus(SpanStatus(code: .error))
            } else if let failure, status == nil {
                span.attributes["error.type"] = failure.kind == .transient ? "transient" : "failed"
                span.setStatus(SpanStatus(code: .error, message: failure.reason))
            }
        }
        span.end()
    }
}
