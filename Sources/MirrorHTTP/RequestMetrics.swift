import Metrics

/// What one job's requests count through swift-metrics: each attempt by status class and its
/// duration, each retry, each 429, each wait for a host's quota and its length. Made once per sender, so an attempt only increments
/// (with no backend bootstrapped, swift-metrics' no-op handlers). Labels stay few: the job
/// and a status class, never a URL.
package struct RequestMetrics: Sendable {
    private let requests: [String: Counter]
    private let duration: Metrics.Timer
    private let retries: Counter
    private let rateLimited: Counter
    private let quotaWaits: Counter
    private let quotaWaitSeconds: FloatingPointCounter

    /// The status classes an attempt is counted under; `error` when no status line arrived.
    static let classes = ["1xx", "2xx", "3xx", "4xx", "5xx", "error"]

    package init(job: String) {
        let dimensions = [("job", job)]
        requests = Dictionary(uniqueKeysWithValues: Self.classes.map { statusClass in
            (statusClass, Counter(label: "mirror_http_requests_total", dimensions: dimensions + [("status_class", statusClass)]))
        })
        duration = Metrics.Timer(label: "mirror_http_request_duration_seconds", dimensions: dimensions)
        retries = Counter(label: "mirror_http_retries_total", dimensions: dimensions)
        rateLimited = Counter(label: "mirror_http_rate_limited_total", dimensions: dimensions)
        quotaWaits = Counter(label: "mirror_quota_waits_total", dimensions: dimensions)
        quotaWaitSeconds = FloatingPointCounter(label: "mirror_quota_wait_seconds_total", dimensions: dimensions)
    }

    /// `2xx` for 204, `error` for no status.
    static func statusClass(_ status: Int?) -> String {
        guard let status, (100...599).contains(status) else { return "error" }
        return "\(status / 100)xx"
    }

    /// An attempt answered `status` (nil: none arrived) after `elapsed`.
    func attempted(status: Int?, elapsed: Duration) {
        requests[Self.statusClass(status)]?.increment()
        duration.record(duration: elapsed)
        if status == 429 { rateLimited.increment() }
    }

    func retried() {
        retries.increment()
    }

    /// A request waits `seconds` for its host's quota (`QuotaPacer`): a spent budget's renewal
    /// or the end of a `Retry-After`.
    func waitedForQuota(seconds: Double) {
        quotaWaits.increment()
        quotaWaitSeconds.increment(by: seconds)
    }
}
