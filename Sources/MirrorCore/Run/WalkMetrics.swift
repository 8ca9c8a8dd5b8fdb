import Foundation
import Metrics
import MirrorModel

/// What a job's walk counts through swift-metrics once it ends, from the facts its result
/// already holds: pages stored, records new, updated and deleted, response bytes and how long it
/// took; then how the job ended in the run (`ended`), for alerts on a failed or stale job. Its
/// requests are counted as they are sent (`RequestMetrics`).
struct WalkMetrics {
    let job: String

    func record(_ walk: WalkResult, elapsed: Duration) {
        let dimensions = [("job", job)]
        Counter(label: "mirror_pages_stored_total", dimensions: dimensions)
            .increment(by: max(0, walk.pages - walk.pagesSkipped))
        for (change, count) in [("new", walk.counts.new), ("updated", walk.counts.updated), ("deleted", walk.counts.deleted)] {
            Counter(label: "mirror_records_total", dimensions: dimensions + [("change", change)]).increment(by: count)
        }
        Counter(label: "mirror_fetched_bytes_total", dimensions: dimensions).increment(by: walk.bytes)
        Metrics.Timer(label: "mirror_walk_duration_seconds", dimensions: dimensions).record(duration: elapsed)
    }

    /// How the job ended in this run, however it got there (a walk, a deferral an earlier run
    /// asked for, a database that did not open): whether it succeeded (1 or 0, as
    /// blackbox_exporter's `probe_success`; a deferred job is neither, and is counted instead),
    /// the job's `refresh_after`, and when it last succeeded, in this run or, as `mirror status`
    /// says, an earlier one (`lastSuccess`; nil: never, or not known).
    func ended(_ result: JobResult, refreshAfter: Double?, lastSuccess: Date?) {
        let dimensions = [("job", job)]
        let deferred = Counter(label: "mirror_jobs_deferred_total", dimensions: dimensions)
        if result == .deferred {
            deferred.increment()
        } else {
            Gauge(label: "mirror_job_success", dimensions: dimensions).record(result == .ok ? 1 : 0)
        }
        if let refreshAfter {
            Gauge(label: "mirror_job_refresh_after_seconds", dimensions: dimensions).record(refreshAfter)
        }
        if let lastSuccess {
            Gauge(label: "mirror_last_success_timestamp_seconds", dimensions: dimensions)
                .record(lastSuccess.timeIntervalSince1970.rounded())
        }
    }
}
