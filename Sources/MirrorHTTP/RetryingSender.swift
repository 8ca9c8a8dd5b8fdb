import Foundation
package import Logging
package import MirrorModel

/// Sends one request as a job's settings say, for pages and files alike: it waits for its
/// host's quota (`QuotaPacer`, fed each answer's headers) and its turn at the host
/// (`rate_limit`), retries a network error, a timeout, a 5xx, 408 or 429 with backoff or the
/// server's `Retry-After` (`retries`), defers the request when the API asks for a longer wait
/// than `max_wait`, and sends nothing once its task is cancelled: not the first attempt, not
/// a retry. Each attempt sent is a client span (`RequestSpan`), a child of the task's.
package struct RetryingSender: Sendable {
    /// An answer worth asking again for.
    package struct Retryable: Sendable {
        package var status: Int
        package var retryAfter: String?

        package init(status: Int, retryAfter: String? = nil) {
            self.status = status
            self.retryAfter = retryAfter
        }
    }

    /// The last attempt's answer or error, and how many retries came before it.
    package struct Outcome<Response: Sendable>: Sendable {
        package var result: Result<Response, HTTPError>
        package var retries: Int

        /// ` (after 2 retries)`, or nothing: the tail of a failure's message.
        package var afterRetries: String {
            retries == 0 ? "" : " (after \(retries) \(retries == 1 ? "retry" : "retries"))"
        }
    }

    package let job: String
    package let retries: Int
    package let rateLimit: RateLimit?
    package let limiter: RateLimiter
    /// What each host says of its quota, shared by the run.
    package let quota: QuotaPacer
    /// Seconds: the longest wait the API may ask for before a request is deferred (`max_wait`).
    package let maxWait: Double
    package let policy: RetryPolicy
    package let logger: Logger
    /// What the wait before a retry reads.
    let clock: RunClock
    let metrics: RequestMetrics

    package init(job: String, retries: Int, rateLimit: RateLimit?, limiter: RateLimiter, policy: RetryPolicy, logger: Logger,
                clock: RunClock = .continuous, quota: QuotaPacer? = nil, maxWait: Double = JobSpec.defaultMaxWait) {
        self.job = job
        self.retries = retries
        self.rateLimit = rateLimit
        self.limiter = limiter
        self.quota = quota ?? QuotaPacer(clock: clock)
        self.maxWait = maxWait
        self.policy = policy
        self.logger = logger
        self.clock = clock
        metrics = RequestMetrics(job: job)
    }

    package init(job: JobSpec, retries: Int? = nil, limiter: RateLimiter, quota: QuotaPacer, policy: RetryPolicy,
                 logger: Logger, clock: RunClock) {
        self.init(job: job.name, retries: retries ?? job.retries, rateLimit: job.rateLimit, limiter: limiter, policy: policy,
                  logger: logger, clock: clock, quota: quota, maxWait: job.maxWait)
    }

    /// Makes attempts with `exchange` until one gives an answer that `retryable` does not
    /// flag, an error that is not worth another try, or the retries run out. `answer` gives
    /// a response's status and headers, for the host's quota. A wait the API asks for that
    /// is longer than `max_wait` ends the exchange with a `.deferred` error.
    package func send<Response: Sendable>(
        _ url: RedactedURL,
        method: String = "GET",
        retryable: (Response) -> Retryable?,
        answer: (Response) -> (status: Int, headers: [String: String])? = { _ in nil },
        exchange: () async throws(HTTPError) -> Response
    ) async -> Outcome<Response> {
        var attempt = 0
        // Parsed once: the quota, the rate limit and the wait after a flagged answer count by it.
        let host = url.host
        while true {
            let result: Result<Response, HTTPError>
            var admitted = false
            var sentAt: ContinuousClock.Instant?
            var span: RequestSpan?
            do throws(HTTPError) {
                if let wait = try await admit(url, host: host) {
                    return Outcome(result: .failure(deferral(url, wait, status: nil)), retries: attempt)
                }
                admitted = true
                try await waitForTurn(url, host: host)
                sentAt = ContinuousClock.now
                let sending = RequestSpan(method: method, url: url, job: job, resent: attempt)
                span = sending
                result = await sending.around(exchange)
            } catch {
                result = .failure(error)
            }
            if admitted {
                var heard: (status: Int, headers: [String: String])?
                if case let .success(response) = result { heard = answer(response) }
                quota.heard(host: host, status: heard?.status, headers: heard?.headers)
                if let sentAt {
                    let status: Int? = switch result {
                    case .success: heard?.status
                    case let .failure(error): error.status
                    }
                    metrics.attempted(status: status, elapsed: ContinuousClock.now - sentAt)
                    var failure: HTTPError?
                    if case let .failure(error) = result { failure = error }
                    span?.end(status: status, failure: failure)
                }
            }
            let again: (cause: String, status: Int?, retryAfter: String?)?
            switch result {
            case let .success(response):
                again = retryable(response).map { ("HTTP \($0.status)", $0.status, $0.retryAfter) }
            case let .failure(error):
                again = error.kind == .transient ? (error.reason, error.status, nil) : nil
            }
            guard let again else { return Outcome(result: result, retries: attempt) }
            // An answer that asks for a longer wait than the job allows puts the request off,
            // whether or not retries are left: a pause, not a failure.
            var asked: QuotaPacer.Wait?
            if case .success = result { asked = askedWait(url, retryAfter: again.retryAfter) }
            if let asked, quota.isTooLong(asked.until, maxWait: maxWait) {
                return Outcome(result: .failure(deferral(url, asked, status: again.status)), retries: attempt)
            }
            guard attempt < retries,
                  await pause(attempt: &attempt, url: url, cause: again.cause, status: again.status,
                              retryAfter: again.retryAfter, until: asked?.until) else {
                return Outcome(result: result, retries: attempt)
            }
        }
    }

    /// Nothing is sent from a cancelled task; otherwise waits for the host's quota, unless
    /// that wait is too long: then it is returned, and nothing was counted.
    private func admit(_ url: RedactedURL, host: String) async throws(HTTPError) -> QuotaPacer.Wait? {
        if Task.isCancelled { throw .cancelled(url) }
        do {
            return try await quota.admit(host: host, maxWait: maxWait) { wait in
                metrics.waitedForQuota(seconds: max(0, (wait.until - clock.now).seconds))
                logger.warning("waiting for the host's quota", metadata: [
                    "job": "\(job)", "url": "\(url.shortDescription)", "cause": "\(Self.said(wait.cause))",
                    "until": "\(Timestamp.string(quota.date(at: wait.until)))",
                ])
            }
        } catch {
            throw .cancelled(url)
        }
    }

    /// A rate-limited request waits for its slot.
    private func waitForTurn(_ url: RedactedURL, host: String) async throws(HTTPError) {
        guard let rateLimit else { return }
        do {
            try await limiter.acquire(host: host, limit: rateLimit)
        } catch {
            throw .cancelled(url)
        }
    }

    /// The wait a flagged answer asks for: its `Retry-After`, or the quota its host spent.
    private func askedWait(_ url: RedactedURL, retryAfter: String?) -> QuotaPacer.Wait? {
        var wait = quota.nextTurn(host: url.host)
        if let retryAfter, let seconds = RetryPolicy.seconds(retryAfter: retryAfter, now: clock.date) {
            let until = clock.now + QuotaPacer.duration(max(0, seconds))
            if until >= wait?.until ?? clock.now { wait = QuotaPacer.Wait(until: until, cause: .retryAfter) }
        }
        return wait
    }

    /// The error of a request put off by `wait`.
    private func deferral(_ url: RedactedURL, _ wait: QuotaPacer.Wait, status: Int?) -> HTTPError {
        let seconds = max(0, (wait.until - clock.now).seconds)
        let until = quota.date(at: wait.until)
        logger.warning("deferred", metadata: [
            "job": "\(job)", "url": "\(url.shortDescription)", "cause": "\(Self.said(wait.cause))",
            "http.status": "\(status.map(String.init) ?? "none")", "until": "\(Timestamp.string(until))",
        ])
        return .deferred(url, cause: wait.cause, seconds: seconds, maxWait: maxWait, pastDeadline: seconds <= maxWait,
                         until: until, status: status)
    }

    private static func said(_ cause: HTTPError.Deferral) -> String {
        switch cause {
        case .quota: "quota spent"
        case .retryAfter: "Retry-After"
        }
    }

    /// Counts retry number `attempt` and sleeps before it (until `until`, the wait the answer
    /// asked for, else a backoff), logging why; false if the task was cancelled, before or
    /// during the sleep: a request no longer wanted is not tried again.
    private func pause(attempt: inout Int, url: RedactedURL, cause: String, status: Int?, retryAfter: String?,
                       until: RunClock.Instant?) async -> Bool {
        if Task.isCancelled { return false }
        attempt += 1
        metrics.retried()
        let delay = until.map { max(0, ($0 - clock.now).seconds) }
            ?? policy.delay(attempt: attempt, retryAfter: retryAfter, now: clock.date)
        logger.warning("retrying", metadata: [
            "job": "\(job)", "url": "\(url.shortDescription)", "cause": "\(cause)", "http.status": "\(status.map(String.init) ?? "none")",
            "attempt": "\(attempt)", "delay": "\(String(format: "%.2f", delay))s",
        ])
        do {
            try await clock.sleep(until: until ?? clock.now + .seconds(delay))
            return true
        } catch {
            return false
        }
    }
}
