package import Foundation
package import MirrorModel
import Synchronization

/// Paces requests to what each host says of its quota, shared by every job of a run (and
/// by pages and files alike): a host whose budget is spent is sent nothing until its
/// window renews, and one that answered `Retry-After` (a 429, a 503) nothing until then. A
/// wait longer than a job's `max_wait`, or one that would outlast `--max-time`, is not
/// waited: the request is deferred instead, and the caller says until when.
///
/// Hosts are `host:port`, as `RateLimiter` counts them. The budget is the last `remaining`
/// a response said, less the requests sent since and not yet answered (a response may not
/// count those yet): requests in flight never overrun a known budget, at the cost of
/// sometimes waiting for a renewal a request or two early. A host that has said nothing is
/// not paced: the first answers of a run tell.
///
/// Every request of a run passes here twice, so the hosts are kept under a lock rather than
/// in an actor: a request that need not wait takes the lock and goes on, with no hop to
/// another executor and back.
package final class QuotaPacer: Sendable {
    /// A wait a host asks for.
    package struct Wait: Sendable, Equatable {
        package let until: RunClock.Instant
        package let cause: HTTPError.Deferral
    }

    private struct Host {
        /// Requests a window allows, and the window's length, when said.
        var limit: Int?
        var window: Double?
        /// Requests left in the window as far as known, less those in flight.
        var remaining: Int?
        /// When the current window renews.
        var renews: RunClock.Instant?
        /// Nothing is sent before this (`Retry-After`).
        var blockedUntil: RunClock.Instant?
        /// Requests sent and not yet answered.
        var inFlight = 0
    }

    private let hosts = Mutex<[String: Host]>([:])
    package let clock: RunClock
    /// `--max-time`: no wait runs past it.
    private let deadline: RunClock.Instant?

    package init(clock: RunClock = .continuous, deadline: RunClock.Instant? = nil) {
        self.clock = clock
        self.deadline = deadline
    }

    /// Waits until `host` may be sent a request and counts it against the host's budget;
    /// returns nil then. When the wait would be longer than `maxWait` seconds or outlast the
    /// run, returns it without waiting or counting anything. Throws `CancellationError` when
    /// the task is cancelled while it waits.
    /// `willWait` is told of each wait before it begins.
    package func admit(host key: String, maxWait: Double, willWait: @Sendable (Wait) -> Void = { _ in }) async throws -> Wait? {
        while true {
            try Task.checkCancellation()
            guard let wait = claim(key) else { return nil }
            if isTooLong(wait.until, maxWait: maxWait) { return wait }
            willWait(wait)
            try await clock.sleep(until: wait.until)
        }
    }

    /// Counts a request against `key`'s budget and returns nil when it may be sent now;
    /// otherwise the wait before it may, with nothing counted.
    private func claim(_ key: String) -> Wait? {
        let now = clock.now
        return hosts.withLock { hosts in
            var host = hosts[key] ?? Host()
            defer { hosts[key] = host }
            if let renews = host.renews, renews <= now {
                host.renews = nil
                host.remaining = host.limit
            }
            if let blocked = host.blockedUntil, blocked > now {
                return Wait(until: blocked, cause: .retryAfter)
            }
            if let remaining = host.remaining, remaining <= 0 {
                if host.renews == nil, let window = host.window {
                    // Spent, and no reset said: the policy's window.
                    host.renews = now + Self.duration(window)
                }
                // Spent with no reset known at all: only the host can say; it is asked.
                if let renews = host.renews { return Wait(until: renews, cause: .quota) }
            }
            host.remaining = host.remaining.map { $0 - 1 }
            host.inFlight += 1
            return nil
        }
    }

    /// A request `admit` let through has ended: with a response's status and headers, or
    /// with none (a network error, a timeout, a cancellation).
    package func heard(host key: String, status: Int?, headers: [String: String]?) {
        // The headers are read before the lock is taken: it is held for the update alone.
        let reading = status != nil ? headers.map { QuotaReading(headers: $0, now: clock.date) } : nil
        let now = clock.now
        hosts.withLock { hosts in
            var host = hosts[key] ?? Host()
            host.inFlight = max(0, host.inFlight - 1)
            defer { hosts[key] = host }
            guard let status, let reading else { return }
            if let limit = reading.limit { host.limit = limit }
            if let window = reading.window { host.window = window }
            if let seconds = reading.retryAfter, status == 429 || status == 503 {
                let until = now + Self.duration(seconds)
                host.blockedUntil = max(host.blockedUntil ?? until, until)
            }
            guard let remaining = reading.remaining else { return }
            // The requests still in flight may not be counted in what this response says.
            let left = remaining - host.inFlight
            let renews = reading.reset.map { now + Self.duration($0) }
            // A reset later than the one known (beyond the rounding of whole seconds) is a new window.
            let newWindow = host.remaining == nil
                || renews.map { renews in host.renews.map { renews > $0 + .milliseconds(1500) } ?? true } ?? false
            host.remaining = newWindow ? left : min(host.remaining ?? left, left)
            if let renews { host.renews = newWindow ? renews : max(host.renews ?? renews, renews) }
        }
    }

    /// When `host` may next be sent a request, if not now: the end of its `Retry-After`, or the
    /// renewal of its spent quota.
    package func nextTurn(host key: String) -> Wait? {
        guard let host = hosts.withLock({ $0[key] }) else { return nil }
        let now = clock.now
        if let blocked = host.blockedUntil, blocked > now { return Wait(until: blocked, cause: .retryAfter) }
        if let remaining = host.remaining, remaining <= 0, let renews = host.renews, renews > now {
            return Wait(until: renews, cause: .quota)
        }
        return nil
    }

    /// A wait until `until` is longer than `maxWait` seconds, or would outlast the run.
    package func isTooLong(_ until: RunClock.Instant, maxWait: Double) -> Bool {
        let now = clock.now
        if until - now > Self.duration(maxWait) { return true }
        if let deadline, until >= deadline { return true }
        return false
    }

    /// The time of day at `instant`, rounded up to the second: when a deferred request may be sent.
    package func date(at instant: RunClock.Instant) -> Date {
        let date = clock.date.addingTimeInterval((instant - clock.now).seconds)
        return Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.up))
    }

    /// `seconds` as a duration, from 0 to `RetryPolicy.longestWait` (NaN: 0).
    static func duration(_ seconds: Double) -> Duration {
        seconds.isNaN ? .zero : .milliseconds(Int64(min(max(0, seconds), RetryPolicy.longestWait) * 1000))
    }
}
