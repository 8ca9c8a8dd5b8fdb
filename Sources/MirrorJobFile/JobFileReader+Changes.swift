import MirrorModel
import Yams

/// `incremental` and `deleted`: how a job follows what changed since its last run.
extension JobFileReader {
    /// `incremental`: a record path, or a mapping with `path` or `from: last_run`,
    /// `initial` and `lookback`.
    mutating func readIncremental(_ job: JobNodes) -> JobSpec.Incremental? {
        guard let node = job.keys[.incremental]?.value else { return nil }
        guard case .mapping = node else {
            return path(node, key: "incremental").map { JobSpec.Incremental(source: .path($0)) }
        }
        let map = mapping(node, keys: IncrementalKey.self, context: "incremental")
        var incremental: JobSpec.Incremental?
        switch (map[.path], map[.from]) {
        case let (pathNode?, nil):
            incremental = path(pathNode.value, key: "incremental.path").map { JobSpec.Incremental(source: .path($0)) }
        case let (nil, from?):
            if scalarText(from.value) == "last_run" {
                incremental = JobSpec.Incremental(source: .lastRun)
            } else {
                error(from.value, "'incremental.from' must be last_run, not '\(scalarText(from.value) ?? "a collection")'")
            }
        case let (_?, from?):
            error(from.key, "'incremental' takes 'path' or 'from', not both")
        case (nil, nil):
            error(node, "'incremental' of \(job.label) needs 'path' (a record path such as updated_at) or 'from: last_run'")
        }
        if let n = map[.initial]?.value, let text = string(n, key: "incremental.initial") {
            if !text.secrets.isEmpty {
                error(n, "'incremental.initial' is shown in the summary and stored: a variable in it must be listed in 'not_secret'")
            } else if text.value.isEmpty {
                error(n, "'incremental.initial' must be a value such as 2024-01-01T00:00:00Z or 0")
            } else {
                // A plain integer stays a number, as the API would send it.
                let number = isPlain(n) && IDOrder.IntegerText(text.value) != nil
                incremental?.initial = SinceValue(text: text.value, isNumber: number)
            }
        }
        if let n = map[.lookback]?.value {
            incremental?.lookback = duration(n, key: "incremental.lookback", in: JobLimits.lookback, examples: "30s, 10m or 1d")
            if let initial = incremental?.initial, initial.isNumber {
                error(n, "'incremental.lookback' moves times back, but 'incremental.initial' (\(initial.text)) is a number")
            }
        }
        return incremental
    }

    /// `deleted`: a record path, or a mapping with `path` and `equals`.
    mutating func readDeleted(_ job: JobNodes) -> JobSpec.Deleted? {
        guard let node = job.keys[.deleted]?.value else { return nil }
        guard case .mapping = node else {
            return path(node, key: "deleted").map { JobSpec.Deleted(path: $0) }
        }
        let map = mapping(node, keys: DeletedKey.self, context: "deleted")
        guard let pathNode = map[.path]?.value else {
            error(node, "'deleted' of \(job.label) needs 'path', the record path that marks a deleted record")
            return nil
        }
        var deleted = path(pathNode, key: "deleted.path").map { JobSpec.Deleted(path: $0) }
        if let n = map[.equals]?.value {
            if case .scalar = n, let text = string(n, key: "deleted.equals") {
                deleted?.equals = text.value
            } else {
                error(n, "'deleted.equals' must be a value such as \"deleted\" or true")
            }
        }
        return deleted
    }

    /// `{since}` goes with `incremental`, and `prune` does not.
    mutating func checkIncremental(_ job: JobNodes, _ incremental: JobSpec.Incremental?, prune: Bool,
                                   known: JobSpec.Stop.Known?, templates: [String]) {
        let usesSince = templates.contains { $0.contains("{since}") }
        if incremental != nil, !usesSince {
            error(job.keys[.incremental]?.value, "'incremental' of \(job.label) needs {since} in its url, body or headers")
        } else if incremental == nil, usesSince {
            error(job.keys[.url]?.value, "\(job.label) uses {since} but has no 'incremental' saying where it comes from")
        }
        if incremental != nil, prune, let pruneNode = job.keys[.prune]?.value {
            error(pruneNode, "'prune' cannot go with 'incremental' in \(job.label): an incremental walk sees only what "
                + "changed, so every record it did not see would be deleted")
        }
        var byPath = false
        if case .path? = incremental?.source { byPath = true }
        if known == .since, !byPath, let stop = job.keys[.stop]?.value {
            error(stop, "'stop.known: since' of \(job.label) compares each page's records with {since}: it needs "
                + "'incremental' with a record path (such as updated_at)")
        }
    }
}
