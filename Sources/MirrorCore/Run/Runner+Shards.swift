import MirrorJobFile
import MirrorModel

/// `mirror run --shard I/N`: one shard's jobs of the plan `mirror plan` prints.
extension Runner {
    /// The entries of shard `shard` among `all` (every job of `files`, in file order, each
    /// with the index of its file); a `--job` that names only jobs of other shards is a
    /// usage error.
    static func entries<Entry>(_ all: [(entry: Entry, file: Int, job: String)], of files: [JobFile],
                               shard: ShardPlan.Shard, options: Options) throws -> [Entry] {
        let plan = try ShardPlan(files, shards: shard.count) { outputFolder(for: $0, options: options) }
        let selected = all.filter { plan.shard(file: $0.file, job: $0.job) == shard.index }
        for name in options.jobs where !selected.contains(where: { $0.job == name }) {
            let theirs = Set(all.filter { $0.job == name }.compactMap { plan.shard(file: $0.file, job: $0.job) }).sorted()
            throw UsageError("job '\(name)' runs in shard \(theirs.map { "\($0)/\(shard.count)" }.joined(separator: " and ")), "
                + "not in shard \(shard) (mirror plan --shards \(shard.count) lists each shard's jobs)")
        }
        return selected.map(\.entry)
    }
}

extension ShardPlan.Shard {
    /// Where each pod of a Kubernetes Indexed Job finds its index.
    package static let indexVariable = "JOB_COMPLETION_INDEX"

    /// Shard `JOB_COMPLETION_INDEX` of `count` (`mirror run --shards N`).
    package init(count: Int, environment: [String: String]) throws(UsageError) {
        guard let text = environment[Self.indexVariable] else {
            throw UsageError("--shards \(count) takes the shard from \(Self.indexVariable), which is not set: "
                + "name the shard with --shard I/\(count)")
        }
        guard let index = Self.number(text[...]), let shard = Self(index: index, count: count) else {
            throw UsageError("\(Self.indexVariable) must be a shard from 0 to \(count - 1) of --shards \(count), not '\(text)'")
        }
        self = shard
    }
}
