import Synchronization

/// Turns handed out by a test: each `wait` returns once it is given one (`give`); after
/// `giveAll`, every wait returns at once.
package final class Turns: Sendable {
    private struct State {
        var given = 0
        var all = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    package init() {}

    package func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if state.all { return true }
                if state.given > 0 {
                    state.given -= 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    package func give() {
        let waiter = state.withLock { state in
            if state.waiting.isEmpty {
                state.given += 1
                return CheckedContinuation<Void, Never>?.none
            }
            return state.waiting.removeFirst()
        }
        waiter?.resume()
    }

    package func giveAll() {
        let waiting = state.withLock { state in
            state.all = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for waiter in waiting { waiter.resume() }
    }
}
