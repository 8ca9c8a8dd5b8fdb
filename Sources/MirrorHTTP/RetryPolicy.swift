package import Foundation
import MirrorModel

/// When and how long to wait before asking again: after a network error, a timeout,
/// a 5xx, 408 or 429 (or a 403 that says the quota is spent); exponential backoff with
/// jitter, or the server's `Retry-After` (seconds or an HTTP date). A `Retry-After` longer
/// than the job's `max_wait` is not waited: `RetryingSender` defers the request instead, so
/// that no value can hang a cron run. How many retries a job makes is its `retries` key.
package struct RetryPolicy: Sendable, Equatable {
    /// The first backoff, doubled on each retry.
    package var baseDelay: Double
    /// No backoff is longer than this.
    package var maxDelay: Double

    package init(baseDelay: Double = 0.5, maxDelay: Double = 30) {
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// The longest wait an answer can ask for, in seconds (about 31,700 years): longer than
    /// any `max_wait`, so such a request is deferred.
    package static let longestWait = 1e12

    package static func isRetryable(status: Int) -> Bool {
        status == 408 || status == 429 || (500...599).contains(status)
    }

    /// Also a 403 whose headers say the quota is spent: GitHub answers its exhausted rate
    /// limit so, `x-ratelimit-remaining: 0`.
    package static func isRetryable(status: Int, headers: [String: String]) -> Bool {
        isRetryable(status: status) || status == 403 && QuotaReading(headers: headers, now: Date()).isSpent
    }

    /// Seconds to wait before retry number `attempt` (1-based).
    package func delay(attempt: Int, retryAfter: String?, now: Date = Date()) -> Double {
        if let retryAfter, let seconds = Self.seconds(retryAfter: retryAfter, now: now) {
            return max(0, seconds)
        }
        let backoff = min(maxDelay, baseDelay * pow(2, Double(attempt - 1)))
        // Full jitter over the upper half: spreads clients without collapsing to zero.
        return backoff / 2 + Double.random(in: 0...(backoff / 2))
    }

    /// `Retry-After: 120` or `Retry-After: Wed, 21 Oct 2015 07:28:00 GMT`. Seconds too many
    /// for `Int` are `longestWait`; a number of another form (`1e3`, `nan`) is not read.
    package static func seconds(retryAfter: String, now: Date) -> Double? {
        let text = retryAfter.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(text) { return Double(seconds) }
        if !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) { return longestWait }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text) else { return nil }
        return date.timeIntervalSince(now)
    }
}
