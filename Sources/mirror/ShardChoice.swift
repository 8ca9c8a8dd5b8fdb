import ArgumentParser
import Foundation
import MirrorCore
import MirrorJobFile

/// `--shard I/N` or `--shards N` (the index from `JOB_COMPLETION_INDEX`), as `run` and
/// `publish` take them: checked alike, read alike.
enum ShardChoice {
    static func validate(shard: String?, shards: Int?) throws {
        if shard != nil, shards != nil {
            throw ValidationError("--shard and --shards cannot go together: --shard I/N names the shard, --shards N takes it "
                + "from \(ShardPlan.Shard.indexVariable)")
        }
        if let shard, ShardPlan.Shard(shard) == nil {
            let hint = Int(shard) != nil ? " (--shards \(shard) takes I from \(ShardPlan.Shard.indexVariable))" : ""
            throw ValidationError("--shard must be I/N, shard I of N (0 to N-1, N at most \(JobLimits.shards.upperBound)), "
                + "such as 0/3, not '\(shard)'\(hint)")
        }
        if let shards, !JobLimits.shards.contains(shards) {
            throw ValidationError("--shards must be between 1 and \(JobLimits.shards.upperBound), not \(shards)")
        }
    }

    /// The shard chosen, once `validate` passed; nil when neither option was given.
    static func shard(_ shard: String?, shards: Int?) throws -> ShardPlan.Shard? {
        if let shards { return try ShardPlan.Shard(count: shards, environment: ProcessInfo.processInfo.environment) }
        return shard.flatMap { ShardPlan.Shard($0) }
    }
}
