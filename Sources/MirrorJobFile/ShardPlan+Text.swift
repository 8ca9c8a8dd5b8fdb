/// A plan as `mirror plan` prints it: a line per shard for a reader, or JSON of a
/// documented shape (README, "Shards") for a program.
import MirrorJSON
import MirrorModel

extension ShardPlan {
    /// One line per shard, empty ones too: `shard 0/3: jobs.yaml/comments, jobs.yaml/events;
    /// jobs.yaml/users (pinned)`: groups apart by `; `, the jobs of a group by `, `.
    public var text: String {
        (0..<count).map { index in
            let groups = groups(inShard: index).map { group in
                group.jobs.map(\.key).joined(separator: ", ") + (group.pinned ? " (pinned)" : "")
            }
            return "shard \(index)/\(count): " + (groups.isEmpty ? "no jobs" : groups.joined(separator: "; "))
        }.joined(separator: "\n")
    }

    /// `{"shards": N, "assignments": [{"shard": 0, "groups": [{"key": …, "jobs": […], "pinned": false}]}, …]}`,
    /// every shard listed, indented by two spaces.
    public var json: String {
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
