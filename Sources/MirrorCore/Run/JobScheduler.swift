import ServiceLifecycle

/// Runs work for each item, at most `width` at once (whatever the width, never more tasks
/// than items), and gives the results in the items' order. An item whose `after` names
/// another starts only once that one has ended (a child job after its parent). Once the
/// work is stopped (`GracefulStop`) or its task cancelled, no item starts: the results of
/// those that did not are nil.
enum JobScheduler {
    static func map<Item: Sendable, Result: Sendable>(
        _ items: [Item], width: Int, after: [Int?] = [], _ work: @escaping @Sendable (Item) async -> Result
    ) async -> [Result?] {
        var results: [Result?] = Array(repeating: nil, count: items.count)
        await withTaskGroup(of: (Int, Result).self) { group in
            var waiting = Array(items.indices)
            var ended: Set<Int> = []
            var running = 0
            func startReady() {
                while running < max(1, width), !Task.isCancelled, !Task.isShuttingDownGracefully,
                      let position = waiting.firstIndex(where: { index in
                          index >= after.count || after[index].map(ended.contains) ?? true
                      }) {
                    let index = waiting.remove(at: position)
                    running += 1
                    group.addTask { (index, await work(items[index])) }
                }
            }
            startReady()
            while let (index, result) = await group.next() {
                results[index] = result
                ended.insert(index)
                running -= 1
                startReady()
            }
        }
        return results
    }
}
