import Synchronization

/// The requests of a `{page}` walk made ahead of the page being stored. When a request's
/// response arrives, the request `width` pages further on starts at once, from that
/// request's own task, so that a slot does not wait for the walk to store the pages before
/// it. A request for page `p` starts only once the one for `p - width·step` has ended, so
/// no more than `width` are ever in flight; and none starts `2·width` pages or more past
/// the page being stored, so that the responses waiting to be stored stay few.
final class PageWindow: Sendable {
    typealias Fetch = @Sendable (Int) async -> PageWalker.FetchOutcome

    private struct State {
        var tasks: [Int: Task<PageWalker.FetchOutcome, Never>] = [:]
        /// No request for a page value above this: `pages.to`, `--max-pages`.
        var limit: Int
        /// Nor above the last page the latest response announced (`stop.last_page`).
        var announced: Int?
        /// The page the walk stores next.
        var head: Int
        var closed = false
    }

    private let state: Mutex<State>
    private let width: Int
    private let step: Int
    /// Whether an arriving response starts the request `width` pages on.
    private let chained: Bool
    private let fetch: Fetch

    init(width: Int, step: Int, head: Int, limit: Int, chained: Bool, fetch: @escaping Fetch) {
        state = Mutex(State(limit: limit, head: head))
        self.width = width
        self.step = step
        self.chained = chained
        self.fetch = fetch
    }

    /// Starts the request for page value `target` unless it started already, lies past
    /// the limit, or the window is closed.
    func launch(_ target: Int) {
        state.withLock { state in
            guard !state.closed, state.tasks[target] == nil, target <= state.limit, target <= (state.announced ?? .max) else {
                return
            }
            state.tasks[target] = Task {
                let outcome = await fetch(target)
                // The last page this response announces holds before its slot moves on.
                if case let .success(.page(served)) = outcome.result, let last = served.lastPage { announce(last) }
                if chained { launch(after: target) }
                return outcome
            }
        }
    }

    /// Starts the request `width` pages after `page`, while that is within `2·width` pages
    /// of the page being stored (and a page value at all).
    private func launch(after page: Int) {
        let (span, spanOverflow) = width.multipliedReportingOverflow(by: step)
        let (target, targetOverflow) = page.addingReportingOverflow(span)
        guard !spanOverflow, !targetOverflow else { return }
        let near = state.withLock { state in
            let (distance, overflow) = target.subtractingReportingOverflow(state.head)
            return !overflow && distance / 2 < span
        }
        if near { launch(target) }
    }

    /// The walk is about to store `page`.
    func advance(to page: Int) {
        state.withLock { $0.head = page }
    }

    /// The request for `page`, if one was started; the window forgets it.
    func take(_ page: Int) -> Task<PageWalker.FetchOutcome, Never>? {
        state.withLock { $0.tasks.removeValue(forKey: page) }
    }

    /// A response announced the last page.
    func announce(_ last: Int) {
        state.withLock { $0.announced = last }
    }

    /// Cancels every request not taken and waits for them, so that none outlives the walk.
    func close() async {
        let tasks = state.withLock { state in
            state.closed = true
            defer { state.tasks = [:] }
            return Array(state.tasks.values)
        }
        for task in tasks { task.cancel() }
        for task in tasks { _ = await task.value }
    }
}
