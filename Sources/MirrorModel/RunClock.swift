package import Foundation

/// The clock that request deadlines, the download watchdog, retry waits, quota waits and
/// `--max-time` read: the continuous clock in a run; a test passes one that moves only when
/// it says, so that a busy machine cannot decide what timed out or when a quota renewed.
package struct RunClock: Clock {
    package typealias Instant = ContinuousClock.Instant

    private let reading: @Sendable () -> Instant
    private let waiting: @Sendable (Instant) async throws -> Void
    private let dating: @Sendable () -> Date

    /// `sleep` returns once `now` has reached the instant it is given, and throws when its
    /// task is cancelled. `date` is the wall-clock time as this clock tells it (by default,
    /// the time of day when the clock was made, moved on by `now`).
    package init(now: @escaping @Sendable () -> Instant, sleep: @escaping @Sendable (Instant) async throws -> Void,
                date: (@Sendable () -> Date)? = nil) {
        reading = now
        waiting = sleep
        if let date {
            dating = date
        } else {
            let anchor = (date: Date(), instant: now())
            dating = { anchor.date.addingTimeInterval((now() - anchor.instant).seconds) }
        }
    }

    package static let continuous = RunClock(now: { ContinuousClock.now },
                                            sleep: { try await TimerSleep.sleep(until: $0) },
                                            date: { Date() })

    package var now: Instant { reading() }

    /// The time of day: what an API's epoch and HTTP-date times are read against, and what a
    /// deferred job's resume time is said in.
    package var date: Date { dating() }

    package var minimumResolution: Duration { ContinuousClock().minimumResolution }

    package func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await waiting(deadline)
    }
}
