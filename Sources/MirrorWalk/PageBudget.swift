import Synchronization

/// Bounds the response bytes a walk holds for the pages it has not stored yet, beyond the
/// page it stores next: a request made ahead reads its body only while that stays within
/// `limit`, and waits (the server's sending paused by TCP) until the walk stores a page.
/// The page stored next never waits, so the walk always moves on.
///
/// Bytes are counted from a body's first chunk until the walk stores the page or drops
/// it. With small pages it never binds; with pages of tens of megabytes, it keeps one
/// or two of them in memory instead of `concurrency` of them.
package final class PageBudget: Sendable {
    /// Bytes of pages ahead of the one stored next. A parsed page costs up to twice its
    /// response (tiny records: 16 bytes of bookkeeping each).
    package static let defaultLimit = 64 << 20

    package let limit: Int

    private struct Waiter {
        let id: Int
        let page: Int
        let bytes: Int
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var head: Int
        /// Bytes held, by page value.
        var held: [Int: Int] = [:]
        /// Bytes held by pages other than the head.
        var ahead = 0
        var waiters: [Waiter] = []
        var nextID = 0

        func admits(_ page: Int, _ bytes: Int, limit: Int) -> Bool {
            page == head || ahead + bytes <= limit || ahead == 0
        }

        mutating func grant(_ page: Int, _ bytes: Int) {
            held[page, default: 0] += bytes
            if page != head { ahead += bytes }
        }

        /// Grants the waiters that now fit, in the order they came.
        mutating func wake(limit: Int) -> [CheckedContinuation<Void, any Error>] {
            var woken: [CheckedContinuation<Void, any Error>] = []
            var waiting: [Waiter] = []
            for waiter in waiters {
                if admits(waiter.page, waiter.bytes, limit: limit) {
                    grant(waiter.page, waiter.bytes)
                    woken.append(waiter.continuation)
                } else {
                    waiting.append(waiter)
                }
            }
            waiters = waiting
            return woken
        }
    }

    private let state: Mutex<State>

    package init(head: Int, limit: Int = PageBudget.defaultLimit) {
        self.limit = limit
        state = Mutex(State(head: head))
    }

    /// Counts `bytes` more of `page`'s response, waiting while pages ahead hold too much.
    /// Throws `CancellationError` if the task is cancelled while it waits.
    package func take(_ bytes: Int, for page: Int) async throws {
        let limit = limit
        let granted = state.withLock { state in
            guard state.waiters.isEmpty || state.head == page, state.admits(page, bytes, limit: limit) else { return false }
            state.grant(page, bytes)
            return true
        }
        if granted { return }
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let admitted: Bool? = state.withLock { state in
                    if Task.isCancelled { return nil }
                    if state.admits(page, bytes, limit: limit) {
                        state.grant(page, bytes)
                        return true
                    }
                    state.waiters.append(Waiter(id: id, page: page, bytes: bytes, continuation: continuation))
                    return false
                }
                switch admitted {
                case nil: continuation.resume(throwing: CancellationError())
                case true?: continuation.resume()
                case false?: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Requests waiting for bytes.
    package var waiting: Int { state.withLock { $0.waiters.count } }

    /// The walk stores or drops `page`: its bytes are free.
    package func release(_ page: Int) {
        let limit = limit
        let woken = state.withLock { state in
            if let bytes = state.held.removeValue(forKey: page), page != state.head {
                state.ahead -= bytes
            }
            return state.wake(limit: limit)
        }
        for continuation in woken { continuation.resume() }
    }

    /// The walk waits for `page` next: it reads its body whatever the others hold.
    func moveHead(to page: Int) {
        let limit = limit
        let woken = state.withLock { state in
            guard state.head != page else { return [CheckedContinuation<Void, any Error>]() }
            // The new head's bytes no longer count as ahead.
            state.ahead -= state.held[page] ?? 0
            state.head = page
            return state.wake(limit: limit)
        }
        for continuation in woken { continuation.resume() }
    }
}
