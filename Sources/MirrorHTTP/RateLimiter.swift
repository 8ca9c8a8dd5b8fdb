import Foundation
package import MirrorModel

/// Spaces requests to each host, shared by every job of a run that talks to that host.
package actor RateLimiter {
    package typealias Clock = @Sendable () -> ContinuousClock.Instant
    /// Waits until an instant; throws when the task is cancelled.
    package typealias Sleep = @Sendable (ContinuousClock.Instant) async throws -> Void

    private var nextSlot: [String: ContinuousClock.Instant] = [:]
    private let now: Clock
    private let sleep: Sleep

    /// The real clock by default; tests pass their own.
    package init(now: @escaping Clock = { ContinuousClock.now },
                sleep: @escaping Sleep = { try await Task.sleep(until: $0, clock: .continuous) }) {
        self.now = now
        self.sleep = sleep
    }

    /// Waits for this request's turn at `host`. The slot is claimed before waiting, so
    /// concurrent callers line up instead of racing.
    @discardableResult
    package func acquire(host: String, limit: RateLimit) async throws -> ContinuousClock.Instant {
        let now = now()
        let slot = max(now, nextSlot[host] ?? now)
        nextSlot[host] = slot + .seconds(limit.interval)
        if slot > now {
            try await sleep(slot)
        }
        return slot
    }
}
