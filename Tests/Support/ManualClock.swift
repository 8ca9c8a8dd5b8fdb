package import Foundation
package import MirrorModel
import Synchronization

/// A clock that stands still until the test moves it: a timeout, a download's watchdog, a
/// wait before a retry, a quota wait or `--max-time` passes only when the test says, however
/// long the machine takes meanwhile. Its time of day (`date`) moves with it.
package final class ManualClock: Sendable {
    private struct Sleeper {
        let until: RunClock.Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    /// A test waiting for `count` sleeps longer than `beyond` and no longer than `within` to
    /// have begun.
    private struct Watcher {
        let count: Int
        let beyond: Duration
        let within: Duration
        let continuation: CheckedContinuation<RunClock.Instant, Never>

        func wants(_ until: RunClock.Instant, now: RunClock.Instant) -> Bool {
            until > now + beyond && until <= now + within
        }
    }

    private struct State {
        var now: RunClock.Instant
        var sleepers: [Int: Sleeper] = [:]
        var lastID = 0
        /// Sleeps cancelled before they had begun to wait.
        var cancelled: Set<Int> = []
        var watchers: [Watcher] = []

        /// The latest of the sleeps `watcher` waits for, once there are as many as it wants.
        func answer(_ watcher: Watcher) -> RunClock.Instant? {
            let wanted = sleepers.values.map(\.until).filter { watcher.wants($0, now: now) }
            return wanted.count >= watcher.count ? wanted.max() : nil
        }

        /// Takes the watchers that the sleeps now waiting answer, with their answers.
        mutating func answeredWatchers() -> [(Watcher, RunClock.Instant)] {
            var answered: [(Watcher, RunClock.Instant)] = []
            var waiting: [Watcher] = []
            for watcher in watchers {
                if let until = answer(watcher) { answered.append((watcher, until)) } else { waiting.append(watcher) }
            }
            watchers = waiting
            return answered
        }
    }

    private let state = Mutex(State(now: ContinuousClock.now))
    private let start: (instant: RunClock.Instant, date: Date)

    package init() {
        start = (state.withLock { $0.now }, Date())
    }

    /// The clock to hand to the code under test.
    package var clock: RunClock {
        RunClock(now: { [self] in now }, sleep: { [self] until in try await sleep(until: until) }, date: { [self] in date })
    }

    package var now: RunClock.Instant { state.withLock { $0.now } }

    /// The time of day: the moment the clock was made, moved on as the clock was.
    package var date: Date { start.date.addingTimeInterval((now - start.instant).seconds) }

    /// Moves the time on by `duration` and wakes every sleep that is then due.
    package func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.now += duration
            let now = state.now
            let due = state.sleepers.filter { $0.value.until <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Moves the time on to `instant`, if it is ahead.
    package func advance(to instant: RunClock.Instant) {
        let step = instant - now
        if step > .zero { advance(by: step) }
    }

    /// The deadline of a sleep that waits longer than `beyond` from now (and no longer than
    /// `within`), once `count` such sleeps have begun (at once when they are waiting; the latest
    /// of them): how a test learns that the code under test waits.
    package func sleeping(_ count: Int = 1, beyond: Duration, within: Duration = .seconds(86_400 * 365)) async -> RunClock.Instant {
        await withCheckedContinuation { (continuation: CheckedContinuation<RunClock.Instant, Never>) in
            let found: RunClock.Instant? = state.withLock { state in
                let watcher = Watcher(count: count, beyond: beyond, within: within, continuation: continuation)
                if let until = state.answer(watcher) { return until }
                state.watchers.append(watcher)
                return nil
            }
            if let found { continuation.resume(returning: found) }
        }
    }

    private func sleep(until deadline: RunClock.Instant) async throws {
        let id = state.withLock { state in
            state.lastID += 1
            return state.lastID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (ready, answered): (Result<Void, any Error>?, [(Watcher, RunClock.Instant)]) = state.withLock { state in
                    if state.cancelled.remove(id) != nil { return (.failure(CancellationError()), []) }
                    if deadline <= state.now { return (.success(()), []) }
                    state.sleepers[id] = Sleeper(until: deadline, continuation: continuation)
                    return (nil, state.answeredWatchers())
                }
                if let ready { continuation.resume(with: ready) }
                for (watcher, until) in answered { watcher.continuation.resume(returning: until) }
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
