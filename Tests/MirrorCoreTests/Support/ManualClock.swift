import Foundation
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorModel
import Synchronization

/// A clock that stands still until the test moves it: a timeout, a download's watchdog, a
/// wait before a retry or `--max-time` passes only when the test says, however long the
/// machine takes meanwhile.
final class ManualClock: Sendable {
    private struct Sleeper {
        let until: RunClock.Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: RunClock.Instant
        var sleepers: [Int: Sleeper] = [:]
        var lastID = 0
        /// Sleeps cancelled before they had begun to wait.
        var cancelled: Set<Int> = []
    }

    private let state = Mutex(State(now: ContinuousClock.now))

    /// The clock to hand to the code under test.
    var clock: RunClock {
        RunClock(now: { [self] in state.withLock { $0.now } }, sleep: { [self] until in try await sleep(until: until) })
    }

    /// Moves the time on by `duration` and wakes every sleep that is then due.
    func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.now += duration
            let now = state.now
            let due = state.sleepers.filter { $0.value.until <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    private func sleep(until deadline: RunClock.Instant) async throws {
        let id = state.withLock { state in
            state.lastID += 1
            return state.lastID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready: Result<Void, any Error>? = state.withLock { state in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(until: deadline, continuation: continuation)
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    state.cancelled.insert(id)
                    return Sleeper?.none
                }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }
}
