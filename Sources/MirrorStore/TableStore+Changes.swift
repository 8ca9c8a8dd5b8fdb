import GRDB
import MirrorModel

extension TableStore {
    /// Changes beyond this many more than twice the keys the feed needs make it tidied.
    static let feedSlack = 64

    /// Drops from the change feed the changes that a later change of the same key
    /// supersedes, once they are most of it: when it holds more than twice as many rows as
    /// the record tables have records plus the feed has deletions (and `feedSlack` more).
    /// Every reader is unaffected: what it would have read of a key, it reads in its latest
    /// change. So the feed stays about as large as the tables, whatever the churn, and each
    /// tidying is paid for by as many changes as it drops.
    package func dropSupersededChanges() async throws {
        try await pool.writeWithoutTransaction { db in
            // Grouping the whole feed sorts it in a temporary file, not in memory (the store
            // keeps its temporary files in memory otherwise: see `TableStore.init`).
            try db.execute(sql: "PRAGMA temp_store = FILE")
            defer { try? db.execute(sql: "PRAGMA temp_store = MEMORY") }
            try db.inTransaction {
                try Self.dropSuperseded(db)
                return .commit
            }
        }
    }

    private static func dropSuperseded(_ db: Database) throws {
        let feed = try Row.fetchOne(db, sql: """
            SELECT count(*) AS rows, coalesce(sum(op = 'delete'), 0) AS deletes FROM \(StoreSchema.changes)
            """)
        let rows: Int = feed?["rows"] ?? 0
        let deletes: Int = feed?["deletes"] ?? 0
        var records = 0
        for table in try String.fetchAll(db, sql: StoreSchema.recordTables) {
            records += try Int.fetchOne(db, sql: "SELECT count(*) FROM \"\(table)\"") ?? 0
        }
        guard rows > 2 * (records + deletes) + feedSlack else { return }
        // The last row is its key's latest: it stays, and the next `seq` follows it.
        try db.execute(sql: """
            DELETE FROM \(StoreSchema.changes) WHERE seq NOT IN (
              SELECT max(seq) FROM \(StoreSchema.changes) GROUP BY table_name, account, id)
            """)
    }
}
