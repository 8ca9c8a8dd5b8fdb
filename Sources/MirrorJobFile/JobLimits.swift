/// The range of every number a job file may set, checked when the file is loaded. A page
/// value stays far below `Int.max` in any walk (`from + step · pages` passes it only after
/// some 9·10¹² pages), and every duration and size fits the integers that clocks, timers
/// and buffers count in.
import MirrorModel

package enum JobLimits {
    /// `pages.from` and `pages.to`.
    package static let page = 0...1_000_000_000_000
    /// `pages.step`.
    package static let step = 1...1_000_000
    /// `retries`.
    package static let retries = 0...100
    /// `concurrency` and `download_concurrency`.
    package static let concurrency = 1...64
    /// The requests of a `rate_limit`, per second, minute or hour.
    package static let rateCount = 1...1_000_000
    /// `timeout`, in seconds: 1ms to 7d.
    package static let timeout = 0.001...(7 * 86_400.0)
    /// `refresh_after`, in seconds: 1ms to 3650d (ten years).
    package static let refreshAfter = 0.001...(3650 * 86_400.0)
    /// `incremental.lookback`, in seconds: 1ms to 3650d.
    package static let lookback = 0.001...(3650 * 86_400.0)
    /// `max_page_size`, in bytes: 1B to 1GB (a page is held whole in memory).
    package static let pageSize = 1...(1 << 30)
    /// `max_file_size`, in bytes: 1B to 1024GB (a file is streamed to disk).
    package static let fileSize = 1...(1 << 40)
    /// `min_download_rate`, in bytes a second: 0 (no minimum) to 1GB.
    package static let downloadRate = 0...(1 << 30)
    /// `stop.short`: the records of a full page.
    package static let shortPage = 1...1_000_000
    /// `max_wait`, in seconds: 0 (never wait: defer) to 7d.
    package static let maxWait = 0...(7 * 86_400.0)
    /// The shards of `mirror plan --shards N` and `mirror run --shard I/N`: as many as the
    /// completions of a Kubernetes Indexed Job may be.
    package static let shards = 1...100_000
    /// `shard`: an index among them.
    package static let shard = 0...(shards.upperBound - 1)
}

/// `0.001` → `1ms`, `604800` → `7d`: a duration as a job file would write it.
func durationText(_ seconds: Double) -> String {
    if seconds == 0 { return "0s" }
    for (unit, scale) in [("d", 86_400.0), ("h", 3600.0), ("m", 60.0), ("s", 1.0)]
    where seconds >= scale && seconds.truncatingRemainder(dividingBy: scale) == 0 {
        return "\(Int(seconds / scale))\(unit)"
    }
    return "\(Int((seconds * 1000).rounded()))ms"
}
