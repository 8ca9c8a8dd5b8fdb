import Foundation
@testable import MirrorJobFile
@testable import MirrorModel
import Testing

@Suite("tables jobs share, as a job file claims them", .timeLimit(.minutes(6)))
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
}
