import MirrorModel
import Tracing

/// What the spans of a run and of its jobs say once they end, through swift-distributed-tracing's
/// API (the executable chooses the exporter: `run --otlp-endpoint`). A job's span is named
/// `job NAME`, as the jobs of a file are few and fixed; its requests' spans are its children
/// (`RequestSpan`). Attributes hold counts and names, never a URL of the walk, a record or a
/// secret; a failed job's error is its message, as logs say it (secrets masked).
enum RunSpans {
    static func jobSpanName(_ job: String) -> String { "job \(job)" }

    static func started(_ job: JobSpec, span: any Span) {
        guard span.isRecording else { return }
        span.attributes["mirror.job"] = job.name
        span.attributes["mirror.table"] = job.table
        span.attributes["mirror.database"] = job.database
    }

    static func ended(_ outcome: JobOutcome, span: any Span) {
        guard span.isRecording else { return }
        span.attributes["mirror.status"] = outcome.status.rawValue
        span.attributes["mirror.pages"] = outcome.pages.total
        span.attributes["mirror.records.new"] = outcome.records.new
        span.attributes["mirror.records.updated"] = outcome.records.updated
        span.attributes["mirror.records.deleted"] = outcome.records.deleted
        span.attributes["mirror.retries"] = outcome.retries
        span.attributes["mirror.bytes"] = outcome.bytes
        if outcome.status == .failed {
            span.setStatus(SpanStatus(code: .error, message: outcome.error))
        }
    }

    static func ended(_ summary: RunSummary, span: any Span) {
        guard span.isRecording else { return }
        span.attributes["mirror.jobs"] = summary.jobs.count
        span.attributes["mirror.jobs.failed"] = summary.jobs.filter { $0.status == .failed }.count
        if summary.interrupted { span.attributes["mirror.interrupted"] = true }
        if summary.jobs.contains(where: { $0.status == .failed }) {
            span.setStatus(SpanStatus(code: .error, message: "a job failed"))
        }
    }
}
