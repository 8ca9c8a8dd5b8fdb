/// Work over many items with a bound on how much runs at once: the uploads of a publish,
/// the files a remote state pulls.
enum Bounded {
    /// `body` of each item, at most `width` at once, in the items' order. The first error
    /// cancels the others and is thrown.
    static func map<Item: Sendable, Result: Sendable>(
        _ items: [Item], width: Int, _ body: @escaping @Sendable (Item) async throws -> Result
    ) async throws -> [Result] {
        try await withThrowingTaskGroup(of: (Int, Result).self) { group in
            var results = [Result?](repeating: nil, count: items.count)
            var next = 0
            func start() {
                let index = next
                next += 1
                group.addTask { (index, try await body(items[index])) }
            }
            while next < min(width, items.count) { start() }
            while let done = try await group.next() {
                results[done.0] = done.1
                if next < items.count { start() }
            }
            return results.map { $0! }
        }
    }
}
