import Foundation
import Metrics
import MirrorModel

/// What a job's walk counts through swift-metrics once it ends, from the facts its result
/// already holds: pages stored, records new, updated and deleted, response bytes, how long it
/// took, and when it last succeeded (a gauge, for alerts on a stale job). Its requests are
/// counted as they are sent (`RequestMetrics`).
struct WalkMetrics {
    let job: String

    func record(_ walk: WalkResult, ending: WalkEnding, elapsed: Duration, finishedAt: Date) {
        let dimensions = [("job", job)]
        Counter(label: "mirror_pages_stored_total", dimensions: dimensions)
            .increment(by: max(0, walk.pages - walk.pagesSkipped))
        for (change, count) in [("new", walk.counts.new), ("updated", walk.counts.updated), ("deleted", walk.counts.deleted)] {
            Counter(label: "mirror_records_total", dimensions: dimensions + [("change", change)]).increment(by: count)
        }
        Counter(label: "mirror_fetched_bytes_total", dimensions: dimensions).increment(by: walk.bytes)
        let (seconds, attoseconds) = elapsed.components
        Metrics.Timer(label: "mirror_walk_duration_seconds", dimensions: dimensions)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        if ending.status == .ok {
            Gauge(label: "mirror_last_success_timestamp_seconds", dimensions: dimensions)
                .record(finishedAt.timeIntervalSince1970.rounded())
        }
    }
}
