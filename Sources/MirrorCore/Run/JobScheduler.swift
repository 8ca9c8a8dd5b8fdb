/// Runs work for each item, at most `width` at once (whatever the width, never more tasks
/// than items), and gives the results in the items' order. Once the task is cancelled (a
/// signal stopped the run), no item starts: the results of those that did not are nil.
enum JobScheduler {
    static func map<Item: Sendable, Result: Sendable>(
        _ items: [Item], width: Int, _ work: @escaping @Sendable (Item) async -> Result
    ) async -> [Result?] {
        var results: [Result?] = Array(repeating: nil, count: items.count)
        await withTaskGroup(of: (Int, Result).self) { group in
            var pending = items.enumerated()[...]
            func startNext() {
                guard !Task.isCancelled, let (index, item) = pending.popFirst() else { return }
                group.addTask { (index, await work(item)) }
            }
            for _ in 0..<min(max(1, width), items.count) { startNext() }
            while let (index, result) = await group.next() {
                results[index] = result
                startNext()
            }
        }
        return results
    }
}
