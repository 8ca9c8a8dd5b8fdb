import AsyncHTTPClient
package import MirrorModel
import Synchronization

/// Fails a download once nothing has arrived for `idle`, or once a body that has run for
/// `idle` averages under `minRate` bytes a second (0: no minimum): a trickle cannot hold a
/// run (and its lock) forever. One task watches every download of a job, asleep until the
/// earliest moment one of them is due a look, rather than a task and a timer for each file.
///
/// A download is due a look `idle` after it is watched, and then `idle` after the last piece
/// it had received at the previous look. Every download shares `idle`, so one watched later
/// is never due before those watched already: the sleep in progress never has to be cut short.
package final class DownloadWatchdog: Sendable {
    typealias LibraryTask = AsyncHTTPClient.HTTPClient.Task<FileSink.Received>

    private struct Watched {
        let sink: FileSink
        let task: LibraryTask
        var due: RunClock.Instant
    }

    private struct State {
        var watched: [ObjectIdentifier: Watched] = [:]
        /// `run`, waiting for a download to watch.
        var waiting: CheckedContinuation<Void, Never>?
        var cancelled = false
    }

    package let idle: Duration
    package let minRate: Int
    package let clock: RunClock
    private let state = Mutex(State())

    package init(idle: Duration, minRate: Int, clock: RunClock) {
        self.idle = idle
        self.minRate = minRate
        self.clock = clock
    }

    /// Watches the downloads until the task is cancelled.
    package func run() async {
        while let due = await nextDue() {
            do {
                try await clock.sleep(until: due)
            } catch {
                return
            }
            look(at: clock.now)
        }
    }

    /// Watches `task`, whose response `sink` receives, from now.
    func watch(_ sink: FileSink, task: LibraryTask) {
        let due = clock.now + idle
        let waiting = state.withLock { state in
            state.watched[ObjectIdentifier(sink)] = Watched(sink: sink, task: task, due: due)
            defer { state.waiting = nil }
            return state.waiting
        }
        waiting?.resume()
    }

    /// Stops watching the response `sink` receives: it has ended.
    func unwatch(_ sink: FileSink) {
        _ = state.withLock { $0.watched.removeValue(forKey: ObjectIdentifier(sink)) }
    }

    /// The earliest moment a watched download is due a look, once there is one; nil once the
    /// task is cancelled.
    private func nextDue() async -> RunClock.Instant? {
        while !Task.isCancelled {
            if let due = state.withLock({ $0.watched.values.lazy.map(\.due).min() }) { return due }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { state in
                        if state.cancelled || !state.watched.isEmpty { return true }
                        state.waiting = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                let waiting = state.withLock { state in
                    state.cancelled = true
                    defer { state.waiting = nil }
                    return state.waiting
                }
                waiting?.resume()
            }
        }
        return nil
    }

    /// Fails the downloads due a look that have stalled or run too slowly; the others are
    /// due again `idle` after the last piece they received.
    private func look(at now: RunClock.Instant) {
        let due = state.withLock { $0.watched.filter { $0.value.due <= now } }
        for (key, watched) in due {
            let (lastBeat, started, size) = watched.sink.progress
            var failure: (any Error)?
            if now >= lastBeat + idle {
                failure = HTTPClient.TimedOut()
            } else if minRate > 0, let started, now - started >= idle {
                let seconds = (now - started).seconds
                if Double(size) / seconds < Double(minRate) {
                    failure = HTTPClient.TooSlow(bytes: size, seconds: Int(seconds.rounded()), rate: minRate)
                }
            }
            let failed = failure != nil
            state.withLock { state in
                if failed {
                    state.watched[key] = nil
                } else {
                    state.watched[key]?.due = lastBeat + idle
                }
            }
            if let failure { watched.task.fail(reason: failure) }
        }
    }
}
