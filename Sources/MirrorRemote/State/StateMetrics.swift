import Metrics

/// What `--state` counts through swift-metrics: each pull and push that ended well (one that
/// found nothing to bring or send included), the bytes it moved (databases and files) and how
/// long it took, by direction (`pull`, `push`). (`ShardLease` counts the leases it takes over.)
struct StateMetrics: Sendable {
    enum Direction: String {
        case pull, push
    }

    private let transfers: Counter
    private let bytes: Counter
    private let duration: Metrics.Timer

    init(_ direction: Direction) {
        let dimensions = [("direction", direction.rawValue)]
        transfers = Counter(label: "mirror_state_transfers_total", dimensions: dimensions)
        bytes = Counter(label: "mirror_state_transfer_bytes_total", dimensions: dimensions)
        duration = Metrics.Timer(label: "mirror_state_transfer_duration_seconds", dimensions: dimensions)
    }

    /// A transfer of `bytes` ended well after `elapsed`.
    func transferred(bytes count: Int, elapsed: Duration) {
        transfers.increment()
        bytes.increment(by: count)
        duration.record(duration: elapsed)
    }
}
