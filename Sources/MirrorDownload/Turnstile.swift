import Synchronization

/// Lets one task at a time through; the others wait suspended, in the order they came, and
/// no thread waits with them. Taken and left without a suspension while nobody else holds it.
final class Turnstile: Sendable {
    private struct State {
        var held = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Runs `body` once it is this task's turn. A task cancelled while it waits still waits:
    /// a turn is short.
    func pass<T, Failure: Error>(_ body: () throws(Failure) -> T) async throws(Failure) -> T {
        let free = state.withLock { state in
            defer { state.held = true }
            return !state.held
        }
        if !free {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    guard state.held else {
                        state.held = true
                        return true
                    }
                    state.waiting.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }
        defer { leave() }
        return try body()
    }

    /// Hands the turn to the first task waiting, if any.
    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.held = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
