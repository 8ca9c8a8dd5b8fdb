import Foundation
@testable import MirrorCore
@testable import MirrorJobFile
@testable import MirrorModel
import Testing

/// A job file read from text, as `jobs/<path>`; every job lists `list` and is keyed by `id`.
private func load(_ jobs: String, path: String = "jobs.yaml", output: String? = nil, defaults: String = "") throws(ConfigError) -> JobFile {
    try JobFileLoader(environment: [:]).parse(text: """
        version: 1
        \(output.map { "output: \($0)" } ?? "# no output")
        defaults: { records: list, id: id\(defaults) }
        jobs:
        \(jobs)
        """, path: path, folder: "jobs")
}

/// The diagnostics loading `jobs` reports.
private func problems(_ jobs: String) -> [String] {
    do {
        _ = try load(jobs)
        return []
    } catch {
        return error.diagnostics.map(\.description)
    }
}

private func plan(_ files: [JobFile], shards: Int, output: String? = nil) throws(ConfigError) -> ShardPlan {
    try ShardPlan(files, shards: shards) { output ?? $0.output ?? "cache" }
}

/// The diagnostics planning `files` over `shards` reports.
private func problems(_ files: [JobFile], shards: Int, output: String? = nil) -> [String] {
    do {
        _ = try plan(files, shards: shards, output: output)
        return []
    } catch {
        return error.diagnostics.map(\.description)
    }
}

/// Each group's jobs (their keys), by shard.
private func layout(_ plan: ShardPlan) -> [[[String]]] {
    (0..<plan.count).map { plan.groups(inShard: $0).map { $0.jobs.map(\.key) } }
}

/// Jobs by one line each: a, a child b of a, a grandchild c, and d on its own.
private let family = """
      - { name: a, url: "https://example.com/a?page={page}", table: t_a }
      - { name: b, url: "https://example.com/a/{parent.id}/b", table: t_b, parent: a }
      - { name: c, url: "https://example.com/b/{parent.id}/c", table: t_c, parent: b }
      - { name: d, url: "https://example.com/d", table: t_d }
    """

@Suite("shard plans", .timeLimit(.minutes(6)))
struct ShardPlanTests {
    @Test("the documented hash: FNV-1a 64 of 'jobs.yaml/events' is 0x3e2de9276dd45ca2, shard 2 of 4 and 0 of 3")
    func documentedExample() {
        #expect(ShardPlan.fnv1a("".utf8) == 0xcbf2_9ce4_8422_2325)
        #expect(ShardPlan.fnv1a("a".utf8) == 0xaf63_dc4c_8601_ec8c)
        #expect(ShardPlan.fnv1a("jobs.yaml/events".utf8) == 0x3e2d_e927_6dd4_5ca2)
        #expect(ShardPlan.fnv1a("jobs.yaml/events".utf8) == 4_480_493_559_859_141_794)
        #expect(ShardPlan.shard(key: "jobs.yaml/events", count: 4) == 2)
        #expect(ShardPlan.shard(key: "jobs.yaml/events", count: 3) == 0)
        #expect(ShardPlan.key(file: "deploy/jobs/jobs.yaml", job: "events") == "jobs.yaml/events")
        #expect(ShardPlan.key(file: "./jobs.yaml", job: "events") == "jobs.yaml/events")
    }

    @Test("a child job goes with its whole chain of parents; a group's key is its smallest job key")
    func parentChains() throws {
        let plan = try plan([try load(family)], shards: 3)
        // jobs.yaml/a → 2 of 3, jobs.yaml/d → 2 of 3.
        #expect(layout(plan) == [[], [], [["jobs.yaml/a", "jobs.yaml/b", "jobs.yaml/c"], ["jobs.yaml/d"]]])
        #expect(plan.groups.map(\.key) == ["jobs.yaml/a", "jobs.yaml/d"])
        #expect(plan.groups.map(\.pinned) == [false, false])
        #expect(plan.shard(file: 0, job: "c") == 2)
        #expect(plan.shard(file: 1, job: "c") == nil)
        #expect(plan.text == """
            shard 0/3: no jobs
            shard 1/3: no jobs
            shard 2/3: jobs.yaml/a, jobs.yaml/b, jobs.yaml/c; jobs.yaml/d
            """)
    }

    @Test("a plan with shards that have no jobs warns: more shards than groups, or a hash that leaves shards empty")
    func emptyShardWarnings() throws {
        let file = try load(family)
        #expect(try plan([file], shards: 3).warning == "--shards 3 is more than the 2 groups of jobs (a job runs with its "
            + "parents and with the jobs of its database): shards 0 and 1 have no jobs; their runs and publishes do nothing "
            + "and exit 0")
        // jobs.yaml/a and jobs.yaml/d: 1 and 0 of 2, 0 and 0 of 1.
        #expect(try plan([file], shards: 2).warning == nil)
        #expect(try plan([file], shards: 1).warning == nil)
        // jobs.yaml/a → 2 of 3, jobs.yaml/b → 1, jobs.yaml/d → 2: shard 0 has none.
        let three = try load("""
              - { name: a, url: "https://example.com/a", table: t_a }
              - { name: b, url: "https://example.com/b", table: t_b }
              - { name: d, url: "https://example.com/d", table: t_d }
            """)
        #expect(try plan([three], shards: 3).warning == "shard 0 of 3 has no jobs (the hash of the 3 groups' names puts none there; shard: "
            + "pins a group to a shard): its run and publish do nothing and exit 0")
    }

    @Test("jobs of one database file go together, and so do jobs sharing a table (they share its database)")
    func databases() throws {
        let file = try load("""
              - { name: e, url: "https://example.com/e", table: t_e, database: shared.sqlite }
              - { name: f, url: "https://example.com/f", table: t_f, database: shared.sqlite }
              - { name: g, url: "https://example.com/g", table: t_g, share_table: true }
              - { name: h, url: "https://example.com/h", table: t_g, share_table: true }
              - { name: users, url: "https://example.com/u", table: t_h, account: one }
              - { name: z, url: "https://example.com/z", table: t_h, account: two }
            """)
        // e → 1 of 3; g → 2; users → 0.
        #expect(layout(try plan([file], shards: 3)) == [
            [["jobs.yaml/users", "jobs.yaml/z"]], [["jobs.yaml/e", "jobs.yaml/f"]], [["jobs.yaml/g", "jobs.yaml/h"]],
        ])
    }

    @Test("links close transitively: parent to database to parent to database is one group")
    func transitive() throws {
        let file = try load("""
              - { name: a, url: "https://example.com/a", table: t_a }
              - { name: b, url: "https://example.com/a/{parent.id}", table: t_b, parent: a, database: s.sqlite }
              - { name: c, url: "https://example.com/c", table: t_c, database: s.sqlite }
              - { name: d, url: "https://example.com/c/{parent.id}", table: t_d, parent: c }
              - { name: e, url: "https://example.com/e", table: t_e, database: t_d.sqlite }
              - { name: f, url: "https://example.com/f", table: t_f }
            """)
        let plan = try plan([file], shards: 2)
        // a → 0 of 2, f → 1 of 2.
        #expect(layout(plan) == [[["jobs.yaml/a", "jobs.yaml/b", "jobs.yaml/c", "jobs.yaml/d", "jobs.yaml/e"]], [["jobs.yaml/f"]]])
    }

    @Test("across files, one database file in one output folder joins jobs; in two folders it does not, unless --output makes them one")
    func acrossFiles() throws {
        let first = try load(#"  - { name: g, url: "https://example.com/g", table: t_g }"#, output: "out")
        let same = try load(#"  - { name: x, url: "https://example.com/x", table: t_x, database: t_g.sqlite }"#,
                            path: "more.yaml", output: "./out")
        let other = try load(#"  - { name: x, url: "https://example.com/x", table: t_x, database: t_g.sqlite }"#,
                             path: "more.yaml", output: "elsewhere")
        // jobs.yaml/g → 2 of 3, more.yaml/x → 2 of 3 too: the groups tell them apart.
        #expect(layout(try plan([first, same], shards: 3)) == [[], [], [["jobs.yaml/g", "more.yaml/x"]]])
        #expect(layout(try plan([first, other], shards: 3)) == [[], [], [["jobs.yaml/g"], ["more.yaml/x"]]])
        #expect(layout(try plan([first, other], shards: 3, output: "cache")) == [[], [], [["jobs.yaml/g", "more.yaml/x"]]])
        // A job name may repeat across files; the file's name in the key keeps them apart.
        let twin = try load(#"  - { name: g, url: "https://example.com/g", table: t_g }"#, path: "other/more.yaml", output: "elsewhere")
        // jobs.yaml/g → 0 of 4, more.yaml/g → 3 of 4.
        #expect(layout(try plan([first, twin], shards: 4)) == [[["jobs.yaml/g"]], [], [], [["more.yaml/g"]]])
    }

    @Test("a pin moves its whole group; pins that agree are fine; defaults may pin a whole file")
    func pins() throws {
        let pinned = try load(family.replacingOccurrences(of: "parent: b }", with: "parent: b, shard: 1 }")
            .replacingOccurrences(of: "table: t_a }", with: "table: t_a, shard: 1 }")
            .replacingOccurrences(of: "table: t_d }", with: "table: t_d, shard: 0 }"))
        let pinnedPlan = try plan([pinned], shards: 3)
        #expect(layout(pinnedPlan) == [[["jobs.yaml/d"]], [["jobs.yaml/a", "jobs.yaml/b", "jobs.yaml/c"]], []])
        #expect(pinnedPlan.groups.map(\.pinned) == [true, true])
        #expect(pinnedPlan.text == """
            shard 0/3: jobs.yaml/d (pinned)
            shard 1/3: jobs.yaml/a, jobs.yaml/b, jobs.yaml/c (pinned)
            shard 2/3: no jobs
            """)
        let whole = try load(family, defaults: ", shard: 1")
        #expect(layout(try plan([whole], shards: 2)) == [[], [["jobs.yaml/a", "jobs.yaml/b", "jobs.yaml/c"], ["jobs.yaml/d"]]])
        #expect(whole.jobs.map(\.shard) == Array(repeating: ShardPin(shard: 1, line: 3, column: 43), count: 4))
    }

    @Test("two pins of one group that differ are a config error at the later one, naming the earlier; check reports it")
    func pinConflicts() throws {
        #expect(problems("""
              - name: a
                url: "https://example.com/a"
                table: t_a
                shard: 0
              - name: b
                url: "https://example.com/a/{parent.id}"
                table: t_b
                parent: a
                shard: 1
              - name: c
                url: "https://example.com/c"
                table: t_c
                database: t_b.sqlite
                shard: 2
              - name: d
                url: "https://example.com/d"
                table: t_d
                shard: 3
            """) == [
            "jobs.yaml:13:12: job 'b' is pinned to shard 1, but it runs with job 'a', pinned to shard 0 at jobs.yaml:8:12: "
                + "jobs linked by 'parent' or storing into one database file run on one shard; pin them alike",
            "jobs.yaml:18:12: job 'c' is pinned to shard 2, but it runs with job 'a', pinned to shard 0 at jobs.yaml:8:12: "
                + "jobs linked by 'parent' or storing into one database file run on one shard; pin them alike",
        ])
        // Across files, only a plan sees it.
        let first = try load(#"  - { name: g, url: "https://example.com/g", table: t_g, shard: 1 }"#, output: "out")
        let second = try load(#"  - { name: x, url: "https://example.com/x", table: t_x, database: t_g.sqlite, shard: 0 }"#,
                              path: "more.yaml", output: "out")
        #expect(problems([first, second], shards: 2) == [
            "more.yaml:5:87: job 'x' is pinned to shard 0, but it runs with job 'g', pinned to shard 1 at jobs.yaml:5:65: "
                + "jobs linked by 'parent' or storing into one database file run on one shard; pin them alike",
        ])
    }

    @Test("a pin past the last shard is a config error where it is written; shard must be an integer 0 to 99999")
    func pinRange() throws {
        let file = try load("""
              - name: a
                url: "https://example.com/a"
                table: t_a
                shard: 3
              - { name: b, url: "https://example.com/b", table: t_b, shard: 0 }
            """)
        #expect(problems([file], shards: 3) == ["jobs.yaml:8:12: 'shard' of job 'a' is 3, but there are 3 shards (0 to 2)"])
        #expect(problems([file], shards: 1) == ["jobs.yaml:8:12: 'shard' of job 'a' is 3, but there is 1 shard (0)"])
        #expect(layout(try plan([file], shards: 4)) == [[["jobs.yaml/b"]], [], [], [["jobs.yaml/a"]]])
        #expect(problems(#"  - { name: a, url: "https://example.com/a", table: t_a, shard: 100000 }"#)
            == ["jobs.yaml:5:65: 'shard' must be between 0 and 99999, not 100000"])
        #expect(problems(#"  - { name: a, url: "https://example.com/a", table: t_a, shard: -1 }"#)
            == ["jobs.yaml:5:65: 'shard' must be between 0 and 99999, not -1"])
        #expect(problems(#"  - { name: a, url: "https://example.com/a", table: t_a, shard: "1" }"#)
            == ["jobs.yaml:5:65: 'shard' must be an integer, not '1'"])
    }

    @Test("the same files plan the same way; a job added on its own moves no other group")
    func stability() throws {
        let before = try load(family)
        let after = try load(family + "\n" + #"  - { name: zones, url: "https://example.com/z", table: t_z }"#)
        for count in 1...16 {
            let first = try plan([before], shards: count)
            #expect(try plan([before], shards: count).json == first.json)
            let shards = Dictionary(uniqueKeysWithValues: first.groups.map { ($0.key, $0.shard) })
            let grown = try plan([after], shards: count)
            #expect(grown.groups.count == 3)
            for group in grown.groups where group.key != "jobs.yaml/zones" {
                #expect(shards[group.key] == group.shard, "\(count) shards")
            }
        }
    }

    @Test("the JSON of a plan lists every shard, empty ones too, each group with its key, jobs and pin")
    func json() throws {
        let file = try load(family.replacingOccurrences(of: "table: t_d }", with: "table: t_d, shard: 0 }"))
        #expect(try plan([file], shards: 3).json == """
            {
              "shards": 3,
              "assignments": [
                {
                  "shard": 0,
                  "groups": [
                    {
                      "key": "jobs.yaml/d",
                      "jobs": ["jobs.yaml/d"],
                      "pinned": true
                    }
                  ]
                },
                {
                  "shard": 1,
                  "groups": []
                },
                {
                  "shard": 2,
                  "groups": [
                    {
                      "key": "jobs.yaml/a",
                      "jobs": ["jobs.yaml/a", "jobs.yaml/b", "jobs.yaml/c"],
                      "pinned": false
                    }
                  ]
                }
              ]
            }
            """)
    }

    @Test("--shard I/N reads digits only and 0 ≤ I < N ≤ 100000; --shards N takes I from JOB_COMPLETION_INDEX")
    func shardArguments() throws {
        #expect(ShardPlan.Shard("0/3") == ShardPlan.Shard(index: 0, count: 3))
        #expect(ShardPlan.Shard("99999/100000")?.description == "99999/100000")
        for bad in ["3/3", "/3", "1/", "1/0", "-1/3", "+1/3", " 1/3", "1/3/3", "3", "a/3", "0/100001", "1/99999999999999999999"] {
            #expect(ShardPlan.Shard(bad) == nil, "\(bad)")
        }
        #expect(try ShardPlan.Shard(count: 3, environment: ["JOB_COMPLETION_INDEX": "1"]) == ShardPlan.Shard(index: 1, count: 3))
        let cases: [([String: String], String)] = [
            ([:], "--shards 3 takes the shard from JOB_COMPLETION_INDEX, which is not set: name the shard with --shard I/3"),
            (["JOB_COMPLETION_INDEX": "3"], "JOB_COMPLETION_INDEX must be a shard from 0 to 2 of --shards 3, not '3'"),
            (["JOB_COMPLETION_INDEX": ""], "JOB_COMPLETION_INDEX must be a shard from 0 to 2 of --shards 3, not ''"),
            (["JOB_COMPLETION_INDEX": "x1"], "JOB_COMPLETION_INDEX must be a shard from 0 to 2 of --shards 3, not 'x1'"),
        ]
        for (environment, message) in cases {
            #expect { try ShardPlan.Shard(count: 3, environment: environment) } throws: { error in
                (error as? UsageError)?.description == message
            }
        }
    }

    @Test("a run of one shard selects that shard's jobs; --job naming another shard's job is a usage error")
    func selection() throws {
        let file = try load(family)
        var options = Runner.Options()
        options.shard = ShardPlan.Shard(index: 2, count: 3)
        #expect(try Runner.select([file], options: options).map(\.job.name) == ["a", "b", "c", "d"])
        options.shard = ShardPlan.Shard(index: 1, count: 3)
        #expect(try Runner.select([file], options: options).isEmpty)
        options.shard = ShardPlan.Shard(index: 0, count: 2)
        #expect(try Runner.select([file], options: options).map(\.job.name) == ["a", "b", "c"])
        options.jobs = ["c"]
        #expect(try Runner.select([file], options: options).map(\.job.name) == ["c"])
        options.jobs = ["c", "d"]
        #expect { try Runner.select([file], options: options) } throws: { error in
            (error as? UsageError)?.description
                == "job 'd' runs in shard 1/2, not in shard 0/2 (mirror plan --shards 2 lists each shard's jobs)"
        }
        // A pin past the last shard stops the run before anything is fetched.
        options.jobs = []
        let pinned = try load(family.replacingOccurrences(of: "table: t_d }", with: "table: t_d, shard: 2 }"))
        #expect { try Runner.select([pinned], options: options) } throws: { error in
            (error as? ConfigError)?.description == "jobs.yaml:8:65: 'shard' of job 'd' is 2, but there are 2 shards (0 to 1)"
        }
    }
}
