/// The clock that request deadlines, the download watchdog, retry waits and `--max-time`
/// read: the continuous clock in a run; a test passes one that moves only when it says,
/// so that a busy machine cannot decide what timed out.
public struct RunClock: Clock {
    public typealias Instant = ContinuousClock.Instant

    private let reading: @Sendable () -> Instant
    private let waiting: @Sendable (Instant) async throws -> Void

    /// `sleep` returns once `now` has reached the instant it is given, and throws when its
    /// task is cancelled.
    public init(now: @escaping @Sendable () -> Instant, sleep: @escaping @Sendable (Instant) async throws -> Void) {
        reading = now
        waiting = sleep
    }

    public static let continuous = RunClock(now: { ContinuousClock.now },
                                            sleep: { try await Task.sleep(until: $0, clock: .continuous) })

    public var now: Instant { reading() }

    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await waiting(deadline)
    }
}
