import Dispatch
import Synchronization

/// A sleep whose timer is let go as soon as its task is cancelled. `Task.sleep` (Swift 6.3 on
/// Linux) leaves a cancelled sleep's job queued, with its few hundred bytes, until the instant
/// it was due, and every request of a run races its work against such a sleep for its
/// timeout: a walk of 10,000 pages held about 20,000 of them at its end, and grew by 13 MB.
/// Here the wait is a dispatch timer that cancellation cancels, which frees it then.
enum TimerSleep {
    /// Returns at `deadline` (on the continuous clock); throws `CancellationError`, at
    /// once, when the task is or becomes cancelled.
    static func sleep(until deadline: ContinuousClock.Instant) async throws {
        let wait = Wait()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                wait.start(continuation, after: ContinuousClock.now.duration(to: deadline))
            }
        } onCancel: {
            wait.end(throwing: CancellationError())
        }
    }

    /// One sleep: its continuation, resumed once, by the timer or by cancellation, whichever
    /// comes first; the other finds it gone.
    private final class Wait: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Void, any Error>?
            var timer: (any DispatchSourceTimer)?
            /// Cancelled before the continuation was handed over.
            var cancelled = false
        }

        private let state = Mutex(State())

        func start(_ continuation: CheckedContinuation<Void, any Error>, after duration: Duration) {
            guard duration > .zero else {
                let cancelled = state.withLock { $0.cancelled }
                cancelled ? continuation.resume(throwing: CancellationError()) : continuation.resume()
                return
            }
            let (seconds, attoseconds) = duration.components
            let nanoseconds = seconds >= Int64(Int.max / 1_000_000_000) - 1
                ? Int.max : Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
            let started = state.withLock { state -> Bool in
                guard !state.cancelled else { return false }
                let timer = DispatchSource.makeTimerSource(queue: .global())
                timer.schedule(deadline: .now() + .nanoseconds(nanoseconds), leeway: .milliseconds(1))
                timer.setEventHandler { [self] in end(throwing: nil) }
                state.continuation = continuation
                state.timer = timer
                timer.resume()
                return true
            }
            if !started { continuation.resume(throwing: CancellationError()) }
        }

        /// Resumes the sleep, if nothing has: normally, or throwing `error`; its timer is cancelled.
        func end(throwing error: (any Error)?) {
            let continuation = state.withLock { state in
                if error != nil { state.cancelled = true }
                state.timer?.cancel()
                defer { (state.continuation, state.timer) = (nil, nil) }
                return state.continuation
            }
            guard let continuation else { return }
            if let error { continuation.resume(throwing: error) } else { continuation.resume() }
        }
    }
}
