import Foundation
import Logging
import MirrorModel

/// Sends one request as a job's settings say, for pages and files alike: it waits for its
/// turn at the host (`rate_limit`), retries a network error, a timeout, a 5xx, 408 or 429
/// with backoff or the server's `Retry-After` (`retries`), and sends nothing once its task
/// is cancelled: not the first attempt, not a retry.
public struct RetryingSender: Sendable {
    /// An answer worth asking again for.
    public struct Retryable: Sendable {
        public var status: Int
        public var retryAfter: String?

        package init(status: Int, retryAfter: String? = nil) {
            self.status = status
            self.retryAfter = retryAfter
        }
    }

    /// The last attempt's answer or error, and how many retries came before it.
    public struct Outcome<Response: Sendable>: Sendable {
        public var result: Result<Response, HTTPError>
        public var retries: Int

        /// ` (after 2 retries)`, or nothing: the tail of a failure's message.
        public var afterRetries: String {
            retries == 0 ? "" : " (after \(retries) \(retries == 1 ? "retry" : "retries"))"
        }
    }

    package let job: String
    package let retries: Int
    package let rateLimit: RateLimit?
    package let limiter: RateLimiter
    package let policy: RetryPolicy
    package let logger: Logger
    /// What the wait before a retry reads.
    let clock: RunClock

    public init(job: String, retries: Int, rateLimit: RateLimit?, limiter: RateLimiter, policy: RetryPolicy, logger: Logger,
                clock: RunClock = .continuous) {
        self.job = job
        self.retries = retries
        self.rateLimit = rateLimit
        self.limiter = limiter
        self.policy = policy
        self.logger = logger
        self.clock = clock
    }

    package init(job: JobSpec, limiter: RateLimiter, policy: RetryPolicy, logger: Logger, clock: RunClock) {
        self.init(job: job.name, retries: job.retries, rateLimit: job.rateLimit, limiter: limiter, policy: policy,
                  logger: logger, clock: clock)
    }

    /// Makes attempts with `exchange` until one gives an answer that `retryable` does not
    /// flag, an error that is not worth another try, or the retries run out.
    public func send<Response: Sendable>(
        _ url: RedactedURL,
        retryable: (Response) -> Retryable?,
        exchange: () async throws(HTTPError) -> Response
    ) async -> Outcome<Response> {
        var attempt = 0
        while true {
            let result: Result<Response, HTTPError>
            do throws(HTTPError) {
                try await waitForTurn(url)
                result = .success(try await exchange())
            } catch {
                result = .failure(error)
            }
            let again: (cause: String, status: Int?, retryAfter: String?)?
            switch result {
            case let .success(response):
                again = retryable(response).map { ("HTTP \($0.status)", $0.status, $0.retryAfter) }
            case let .failure(error):
                again = error.kind == .transient ? (error.reason, error.status, nil) : nil
            }
            guard let again, attempt < retries,
                  await pause(attempt: &attempt, url: url, cause: again.cause, status: again.status,
                              retryAfter: again.retryAfter) else {
                return Outcome(result: result, retries: attempt)
            }
        }
    }

    /// Nothing is sent from a cancelled task; a rate-limited one waits for its slot.
    private func waitForTurn(_ url: RedactedURL) async throws(HTTPError) {
        if Task.isCancelled { throw .cancelled(url) }
        guard let rateLimit else { return }
        do {
            try await limiter.acquire(host: url.host, limit: rateLimit)
        } catch {
            throw .cancelled(url)
        }
    }

    /// Counts retry number `attempt` and sleeps before it, logging why; false if the task
    /// was cancelled, before or during the sleep: a request no longer wanted is not tried again.
    private func pause(attempt: inout Int, url: RedactedURL, cause: String, status: Int?, retryAfter: String?) async -> Bool {
        if Task.isCancelled { return false }
        attempt += 1
        let delay = policy.delay(attempt: attempt, retryAfter: retryAfter)
        logger.warning("retrying", metadata: [
            "job": "\(job)", "url": "\(url.shortDescription)", "cause": "\(cause)", "http.status": "\(status.map(String.init) ?? "none")",
            "attempt": "\(attempt)", "delay": "\(String(format: "%.2f", delay))s",
        ])
        do {
            try await clock.sleep(for: .seconds(delay))
            return true
        } catch {
            return false
        }
    }
}
