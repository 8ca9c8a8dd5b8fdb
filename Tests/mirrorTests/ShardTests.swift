import Foundation
import MirrorTestSupport
import Testing

/// Four lists of two records on page 1 (none after), events likewise, and each event's comments.
private let shardAPI: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
    let parts = request.path.split(separator: "/").map(String.init)
    if parts.count == 3, parts[0] == "events", parts[2] == "comments" {
        return .json(#"{"list":[{"id":"c\#(parts[1])-1","event":\#(parts[1])},{"id":"c\#(parts[1])-2","event":\#(parts[1])}]}"#)
    }
    guard parts.count == 1, request.parameter("page") == "1" else { return .json(#"{"list":[]}"#) }
    return .json(#"{"list":[{"id":1,"of":"\#(parts[0])"},{"id":2,"of":"\#(parts[0])"}]}"#)
}

/// Four jobs on their own and a parent with its child. With 3 shards: users and tags go to
/// shard 0, orders and zones to 1, events with comments (key jobs.yaml/comments) to 2.
private let shardYAML = """
    version: 1
    defaults: { records: list, id: id }
    jobs:
      - { name: users, url: "BASE/users?page={page}", table: t_user }
      - { name: orders, url: "BASE/orders?page={page}", table: t_order }
      - { name: tags, url: "BASE/tags?page={page}", table: t_tag }
      - { name: zones, url: "BASE/zones?page={page}", table: t_zone }
      - { name: events, url: "BASE/events?page={page}", table: t_event }
      - { name: comments, parent: events, url: "BASE/events/{parent.id}/comments", table: t_comment }
    """

/// The SQLite files of an output folder.
private func databases(in folder: String) throws -> Set<String> {
    Set(try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".sqlite") })
}

/// Every record of every table of `folder`, as `mirror export` prints them, a line each.
private func exported(_ folder: String, in root: String) async throws -> [String] {
    var lines: [String] = []
    for database in try databases(in: root + "/" + folder).sorted() {
        let export = try await mirror(["export", "--table", String(database.dropLast(".sqlite".count)), "--output", folder], in: root)
        #expect(export.status == 0 && export.stderr == "", "\(database)")
        lines += export.stdout.split(separator: "\n").map(String.init)
    }
    return lines
}

@Suite("the mirror binary: shards", .timeLimit(.minutes(6)))
struct ShardTests {
    @Test("three shards store disjoint tables whose records are exactly those of one unsharded run")
    func shardedRuns() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(shardAPI) { server in
            try shardYAML.replacingOccurrences(of: "BASE", with: server.base)
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let plan = try await mirror(["plan", "jobs.yaml", "--shards", "3"], in: folder)
            #expect(plan.status == 0 && plan.stderr == "")
            #expect(plan.stdout == """
                shard 0/3: jobs.yaml/tags; jobs.yaml/users
                shard 1/3: jobs.yaml/orders; jobs.yaml/zones
                shard 2/3: jobs.yaml/comments, jobs.yaml/events

                """)
            for index in 0..<3 {
                let run = try await mirror(["run", "jobs.yaml", "--shard", "\(index)/3", "--output", "s\(index)"], in: folder)
                #expect(run.status == 0, "\(run.stderr)")
            }
            let whole = try await mirror(["run", "jobs.yaml", "--output", "all"], in: folder)
            #expect(whole.status == 0)

            let tables = try (0..<3).map { try databases(in: folder + "/s\($0)") }
            #expect(tables == [["t_tag.sqlite", "t_user.sqlite"], ["t_order.sqlite", "t_zone.sqlite"],
                               ["t_comment.sqlite", "t_event.sqlite"]])
            #expect(tables[0].isDisjoint(with: tables[1]) && tables[0].isDisjoint(with: tables[2])
                && tables[1].isDisjoint(with: tables[2]))
            #expect(tables[0].union(tables[1]).union(tables[2]) == (try databases(in: folder + "/all")))

            var sharded: [String] = []
            for index in 0..<3 { sharded += try await exported("s\(index)", in: folder) }
            let unsharded = try await exported("all", in: folder)
            #expect(unsharded.count == 14)
            #expect(sharded.sorted() == unsharded.sorted())
            #expect(unsharded.contains(#"{"id":"c2-1","event":2}"#))

            // A pod of an Indexed Job: the index comes from JOB_COMPLETION_INDEX.
            let pod = try await mirror(["run", "jobs.yaml", "--shards", "3", "--output", "pod"], in: folder,
                                       environment: ["JOB_COMPLETION_INDEX": "1"])
            #expect(pod.status == 0)
            #expect(pod.stdout.split(separator: "\n").map { $0.prefix { $0 != ":" } } == ["orders", "zones"])
            #expect(try databases(in: folder + "/pod") == ["t_order.sqlite", "t_zone.sqlite"])
            #expect(try await exported("pod", in: folder) == (try await exported("s1", in: folder)))
        }
    }

    @Test("an empty shard runs nothing and exits 0; bad shards and --job outside the shard exit 2 before any request")
    func usage() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(shardAPI) { server in
            try shardYAML.replacingOccurrences(of: "BASE", with: server.base)
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            // users → 4 of 5, orders and zones → 2, tags → 0, comments → 4: shards 1 and 3 are empty.
            let planned = try await mirror(["plan", "jobs.yaml", "--shards", "5"], in: folder)
            #expect(planned.status == 0)
            #expect(planned.stderr == "warning: shards 1 and 3 of 5 have no jobs (the hash of the 5 groups' names puts none "
                + "there; shard: pins a group to a shard): their runs and publishes do nothing and exit 0\n")
            #expect(planned.stdout.hasPrefix("shard 0/5: jobs.yaml/tags\nshard 1/5: no jobs\n"), "\(planned.stdout)")
            let six = try await mirror(["plan", "jobs.yaml", "--shards", "6"], in: folder)
            #expect(six.status == 0)
            #expect(six.stderr.hasPrefix("warning: --shards 6 is more than the 5 groups of jobs (a job runs with its parents "
                + "and with the jobs of its database): shard"), "\(six.stderr)")
            #expect(try await mirror(["plan", "jobs.yaml", "--shards", "3"], in: folder).stderr == "")
            let empty = try await mirror(["run", "jobs.yaml", "--shard", "3/5"], in: folder)
            #expect(empty.status == 0)
            #expect(empty.stdout == "shard 3/5 has no jobs: nothing to run\n")
            #expect(empty.stderr == "")
            let quiet = try await mirror(["run", "jobs.yaml", "--shard", "1/5", "--quiet"], in: folder)
            #expect(quiet.status == 0 && quiet.stdout == "" && quiet.stderr == "")
            #expect(!FileManager.default.fileExists(atPath: folder + "/cache"))

            let outside = try await mirror(["run", "jobs.yaml", "--shard", "1/3", "--job", "events"], in: folder)
            #expect(outside.status == 2)
            #expect(outside.stderr == "error: job 'events' runs in shard 2/3, not in shard 1/3 "
                + "(mirror plan --shards 3 lists each shard's jobs)\n")
            let blank = try await mirror(["run", "jobs.yaml", "--shards", "3"], in: folder, environment: ["JOB_COMPLETION_INDEX": ""])
            #expect(blank.status == 2)
            #expect(blank.stderr == "error: JOB_COMPLETION_INDEX must be a shard from 0 to 2 of --shards 3, not ''\n")
            let past = try await mirror(["run", "jobs.yaml", "--shards", "3"], in: folder, environment: ["JOB_COMPLETION_INDEX": "3"])
            #expect(past.status == 2)
            #expect(past.stderr == "error: JOB_COMPLETION_INDEX must be a shard from 0 to 2 of --shards 3, not '3'\n")
            for arguments in [["--shard", "3"], ["--shard", "3/3"], ["--shard", "0/3", "--shards", "3"], ["--shards", "0"]] {
                let bad = try await mirror(["run", "jobs.yaml"] + arguments, in: folder)
                #expect(bad.status == 2, "\(arguments)")
                #expect(bad.stdout == "", "\(arguments)")
            }
            let number = try await mirror(["run", "jobs.yaml", "--shard", "3"], in: folder)
            #expect(number.stderr.hasPrefix("Error: --shard must be I/N, shard I of N (0 to N-1, N at most 100000), such as 0/3, "
                + "not '3' (--shards 3 takes I from JOB_COMPLETION_INDEX)\n"))
            #expect(server.requests.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: folder + "/cache"))
        }
    }

    @Test("plan --json prints the documented shape exactly; a pin past the last shard is a config error")
    func planJSON() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try """
            version: 1
            defaults: { records: list, id: id }
            jobs:
              - { name: events, url: "https://example.com/events", table: t_event }
              - { name: comments, parent: events, url: "https://example.com/e/{parent.id}", table: t_comment }
              - { name: users, url: "https://example.com/users", table: t_user, shard: 1 }
            """.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
        let plan = try await mirror(["plan", "jobs.yaml", "--shards", "2", "--json"], in: folder)
        #expect(plan.status == 0)
        #expect(plan.stderr == "warning: shard 0 of 2 has no jobs (the hash of the 2 groups' names puts none there; shard: "
            + "pins a group to a shard): its run and publish do nothing and exit 0\n")
        // jobs.yaml/comments → 1 of 2.
        #expect(plan.stdout == """
            {
              "shards": 2,
              "assignments": [
                {
                  "shard": 0,
                  "groups": []
                },
                {
                  "shard": 1,
                  "groups": [
                    {
                      "key": "jobs.yaml/comments",
                      "jobs": ["jobs.yaml/comments", "jobs.yaml/events"],
                      "pinned": false
                    },
                    {
                      "key": "jobs.yaml/users",
                      "jobs": ["jobs.yaml/users"],
                      "pinned": true
                    }
                  ]
                }
              ]
            }

            """)
        let past = try await mirror(["plan", "jobs.yaml", "--shards", "1"], in: folder)
        #expect(past.status == 2 && past.stdout == "")
        #expect(past.stderr == "jobs.yaml:6:76: 'shard' of job 'users' is 1, but there is 1 shard (0)\n")
        let check = try await mirror(["check", "jobs.yaml"], in: folder)
        #expect(check.status == 0 && check.stdout == "jobs.yaml: ok, 3 jobs\n")
        let help = try await mirror(["plan", "--help"], in: folder)
        #expect(help.status == 0)
        #expect(help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            .contains("Exit status: 0 printed; 2 usage or config error (a shard: of N or more, two jobs of one group pinned to different shards)."))
        #expect(try await mirror(["plan", "jobs.yaml", "--shards", "0"], in: folder).status == 2)
        #expect(try await mirror(["plan", "jobs.yaml"], in: folder).status == 2)
    }
}
