/// A plan as `mirror plan` prints it: a line per shard for a reader, or JSON of a
/// documented shape (docs/deploying.md, "Shards") for a program.
import MirrorJSON
import MirrorModel

extension ShardPlan {
    /// One line per shard, empty ones too: `shard 0/3: jobs.yaml/comments, jobs.yaml/events;
    /// jobs.yaml/users (pinned)`: groups apart by `; `, the jobs of a group by `, `.
    package var text: String {
        (0..<count).map { index in
            let groups = groups(inShard: index).map { group in
                group.jobs.map(\.key).joined(separator: ", ") + (group.pinned ? " (pinned)" : "")
            }
            return "shard \(index)/\(count): " + (groups.isEmpty ? "no jobs" : groups.joined(separator: "; "))
        }.joined(separator: "\n")
    }

    /// What `mirror plan` warns of when a shard has no jobs (nil when every one has some):
    /// more shards than groups of jobs, or a hash that leaves shards empty. An empty shard
    /// is no fault, its run and publish do nothing and exit 0, but it is a pod that does nothing.
    package var warning: String? {
        let empty = (0..<count).filter { groups(inShard: $0).isEmpty }
        guard let first = empty.first else { return nil }
        let numbers = empty.count == 1 ? "\(first)"
            : empty.dropLast().map(String.init).joined(separator: ", ") + " and \(empty.last!)"
        let shards = empty.count == 1 ? "shard \(numbers)" : "shards \(numbers)"
        let have = empty.count == 1 ? "has" : "have"
        let outcome = empty.count == 1 ? "its run and publish do nothing and exit 0" : "their runs and publishes do nothing and exit 0"
        if count > groups.count {
            return "--shards \(count) is more than the \(groups.count) group\(groups.count == 1 ? "" : "s") of jobs (a job runs "
                + "with its parents and with the jobs of its database): \(shards) \(have) no jobs; \(outcome)"
        }
        return "\(shards) of \(count) \(have) no jobs (the hash of the \(groups.count) groups' names puts none there; shard: "
            + "pins a group to a shard): \(outcome)"
    }

    /// `{"shards": N, "assignments": [{"shard": 0, "groups": [{"key": …, "jobs": […], "pinned": false}]}, …]}`,
    /// every shard listed, indented by two spaces.
    package var json: String {
        func quoted(_ text: String) -> String { JSONText.quoted(text) }
        let assignments = (0..<count).map { index in
            let groups = groups(inShard: index).map { group in
                """
                        {
                          "key": \(quoted(group.key)),
                          "jobs": [\(group.jobs.map { quoted($0.key) }.joined(separator: ", "))],
                          "pinned": \(group.pinned)
                        }
                """
            }
            let list = groups.isEmpty ? "[]" : "[\n" + groups.joined(separator: ",\n") + "\n      ]"
            return """
                    {
                      "shard": \(index),
                      "groups": \(list)
                    }
                """
        }
        return """
            {
              "shards": \(count),
              "assignments": [
            \(assignments.joined(separator: ",\n"))
              ]
            }
            """
    }
}
