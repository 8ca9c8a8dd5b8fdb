import Foundation
import GRDB
@testable import MirrorCore
@testable import MirrorJobFile
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

@Suite("tables jobs share", .timeLimit(.minutes(3)))
struct TableClaimTests {
    func diagnostics(_ jobs: String) -> [String] {
        let yaml = "version: 1\ndefaults: { records: r, id: id }\njobs:\n"
            + jobs.replacingOccurrences(of: "{ name: ", with: "{ url: \"https://h/x\", name: ")
        do {
            _ = try JobFileLoader(environment: [:]).parse(text: yaml, path: "jobs/x.yaml", folder: "jobs")
            return []
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    @Test("a job is compared with one job of its table, and one of its account, however many jobs share the table")
    func claimsGrowLinearly() throws {
        var yaml = "version: 1\ndefaults: { records: r, id: id }\njobs:\n"
        for index in 0..<2000 { yaml += "  - { name: a\(index), url: \"https://h/\(index)\", table: t_order, account: c\(index) }\n" }
        let file = try JobFileLoader(environment: [:]).parse(text: yaml, path: "jobs/x.yaml", folder: "jobs")
        var claims = TableClaims()
        #expect(file.jobs.allSatisfy { claims.claim($0) == nil })
        #expect(claims.comparisons == 1999)
        // A job of an account that has one: compared with the table's first job and with that one.
        #expect(claims.claim(file.jobs[1500])?.message == "job 'a1500' stores into table 't_order' of t_order.sqlite under "
            + "the same account, as job 'a1500' does: each would overwrite the other's records and prune delete them; set "
            + "share_table: true on both to mean it, or give one its own table or account")
        #expect(claims.comparisons == 2001)
    }

    @Test("tables SQLite would hold as one, or that take mirror's own names, are refused where they are named")
    func refused() {
        // Lines 4 and 5 hold the jobs; the table's value starts at column 43.
        #expect(diagnostics("""
              - { name: a, table: items, database: one.sqlite }
              - { name: b, table: Items, database: one.sqlite }
            """) == ["jobs/x.yaml:5:43: table 'Items' is table 'items' of job 'a' in one.sqlite: SQLite compares table "
                + "names without case; spell them alike to share the table, or name another"])
        #expect(diagnostics("""
              - { name: a, table: items }
              - { name: b, table: items }
            """) == ["jobs/x.yaml:5:43: job 'b' stores into table 'items' of items.sqlite under no account, as job 'a' "
                + "does: each would overwrite the other's records and prune delete them; set share_table: true on both "
                + "to mean it, or give one its own table or account"])
        #expect(diagnostics("""
              - { name: a, table: items, share_table: true }
              - { name: b, table: items }
            """) == ["jobs/x.yaml:5:43: job 'b' stores into table 'items' of items.sqlite under no account, as job 'a' "
                + "does: each would overwrite the other's records and prune delete them; set share_table: true on both "
                + "to mean it, or give one its own table or account"])
        #expect(diagnostics("""
              - { name: a, table: x, database: one.sqlite }
              - { name: b, table: x_walk_order, database: one.sqlite }
            """) == ["jobs/x.yaml:5:43: table 'x_walk_order' in one.sqlite has the name of the index of job 'a''s table "
                + "'x': name it otherwise"])
        #expect(diagnostics("""
              - { name: a, table: X_Walk_Order, database: one.sqlite }
              - { name: b, table: x, database: one.sqlite }
            """) == ["jobs/x.yaml:5:43: the index of table 'x' in one.sqlite would be named 'x_walk_order', the name of "
                + "job 'a''s table 'X_Walk_Order': name one of them otherwise"])
        #expect(diagnostics("""
              - { name: a, table: grdb_migrations }
              - { name: b, table: t, database: files }
            """) == [
                "jobs/x.yaml:4:43: table name 'grdb_migrations' is taken: files of earlier mirror releases keep their schema versions in it",
                "jobs/x.yaml:5:56: 'database' cannot be 'files': that name in the output folder holds downloaded files",
            ])
        // Allowed: different accounts, different databases, or both saying they share.
        #expect(diagnostics("""
              - { name: a, table: items, account: one }
              - { name: b, table: items, account: two }
              - { name: c, table: Items }
              - { name: d, table: t, share_table: true }
              - { name: e, table: t, share_table: true }
            """) == [])
    }

    @Test("jobs of two files that write one output folder are checked against each other before any request")
    func acrossFiles() throws {
        let harness = try Harness()
        let yaml = itemsJob().replacingOccurrences(of: "BASE", with: "http://127.0.0.1:9")
        let first = try harness.load(yaml)
        let second = try JobFileLoader(environment: [:]).parse(
            text: yaml.replacingOccurrences(of: "name: items", with: "name: more"), path: "more.yaml", folder: ".")
        var options = Runner.Options()
        options.output = harness.output
        #expect(throws: UsageError.self) { try Runner.select([first, second], options: options) }
        do {
            _ = try Runner.select([first, second], options: options)
        } catch let error as UsageError {
            #expect(error.description == "more.yaml: job 'more' stores into table 't_item' of t_item.sqlite under no "
                + "account, as job 'items' does: each would overwrite the other's records and prune delete them; set "
                + "share_table: true on both to mean it, or give one its own table or account (both in output folder "
                + "'\(harness.output)')")
        }
    }

    @Test("jobs sharing a table store one row per id; each one's prune removes only ids its own pages held")
    func sharedPrune() async throws {
        let harness = try Harness()
        let pages = Mutex(["a": ["1", "2", "9"], "b": ["3", "4", "9"]])
        let yaml = """
            version: 1
            defaults: { records: data.list, id: id, share_table: true, prune: true }
            jobs:
              - { name: a, url: "BASE/a", table: t_item }
              - { name: b, url: "BASE/b", table: t_item }
            """
        try await FixtureServer.with({ request in
            let ids = pages.withLock { $0[String(request.path.dropFirst())] ?? [] }
            return .json(#"{"data":{"list":["# + ids.map { #"{"id":"\#($0)","from":"\#(request.path)"}"# }
                .joined(separator: ",") + "]}}")
        }) { server in
            let first = try await harness.run(yaml, server: server)
            #expect(first.jobs.map(\.succeeded) == [true, true])
            #expect(try Set(harness.ids()) == ["1", "2", "3", "4", "9"])
            // Job a no longer lists 2 and 9; b still lists 9. Only a runs.
            pages.withLock { $0["a"] = ["1"] }
            let second = try await harness.run(yaml, server: server, jobs: ["a"])
            #expect(second.jobs.map(\.records.pruned) == [2])
            // 9 was a's too: it goes until b sees it again. b's own 3 and 4 stay.
            #expect(try Set(harness.ids()) == ["1", "3", "4"])
            let third = try await harness.run(yaml, server: server, jobs: ["b"])
            #expect(third.jobs.map(\.records.pruned) == [0])
            #expect(try Set(harness.ids()) == ["1", "3", "4", "9"])
        }
    }
}
