/// A job's `shard:`: the shard its group is pinned to, and where the file says so. The
/// number can be checked against the count of shards only once there is one (`mirror plan`,
/// `mirror run --shard`), so the place is kept for that message.
package struct ShardPin: Sendable, Equatable {
    package let shard: Int
    /// Where the value stands in its job file, 1-based.
    package let line: Int
    package let column: Int

    package init(shard: Int, line: Int, column: Int) {
        self.shard = shard
        self.line = line
        self.column = column
    }
}
