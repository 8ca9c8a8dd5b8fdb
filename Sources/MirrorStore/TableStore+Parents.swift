import GRDB
import GRDBSQLite
import MirrorModel

/// `parent`: the parent records a child job has yet to walk, kept in `_mirror_parents` of
/// the parent's file, and the child records of parents that are gone.
extension TableStore {
    /// What queues a parent again: pending, its error gone.
    private static let requeue = """
        ON CONFLICT (job, account, parent_id) DO UPDATE SET state = 'pending', error = NULL, queued_at = excluded.queued_at
        """

    /// Queues the records `ids` (new or changed, in the page being stored) for each child job.
    static func queueParents(_ ids: [String], children: [String], account: String, time: String, db: Database) throws {
        let queue = try db.cachedStatement(sql: """
            INSERT INTO \(StoreSchema.parents) (job, account, parent_id, state, error, queued_at) VALUES (?, ?, ?, 'pending', NULL, ?)
            \(requeue)
            """)
        for child in children {
            for id in ids {
                try queue.execute(arguments: [child, account, id, time])
            }
        }
    }

    /// Queues every record of `table` and `account` for the child job `child` (its first
    /// walk, or `--refresh`), and marks them queued at `time` in the same transaction: a copy
    /// of this file that has the mark has the queue.
    package func queueAllParents(child: String, table: String, account: String, time: String) async throws {
        try await pool.write { db in
            if try db.tableExists(table) {
                try db.execute(sql: """
                    INSERT INTO \(StoreSchema.parents) (job, account, parent_id, state, error, queued_at)
                      SELECT ?1, account, id, 'pending', NULL, ?2 FROM "\(table)" WHERE account = ?3 ORDER BY position
                    \(Self.requeue)
                    """, arguments: [child, time, account])
            }
            try db.execute(sql: """
                INSERT INTO \(StoreSchema.parentsQueued) (job, account, queued_at) VALUES (?, ?, ?)
                ON CONFLICT (job, account) DO UPDATE SET queued_at = excluded.queued_at
                """, arguments: [child, account, time])
        }
    }

    /// When every record of `account` was last queued for the child job `child`
    /// (`queueAllParents`), if ever.
    package func parentsQueued(child: String, account: String) async throws -> String? {
        try await pool.read { db in
            try String.fetchOne(db, sql: "SELECT queued_at FROM \(StoreSchema.parentsQueued) WHERE job = ? AND account = ?",
                                arguments: [child, account])
        }
    }

    /// The ids of the parent records queued for the child job `child`, pending or failed
    /// before, in the parent's walk order; queued ids whose record is gone are dropped.
    package func queuedParents(child: String, table: String, account: String) async throws -> [String] {
        try await pool.write { db in
            guard try db.tableExists(table) else { return [] }
            try db.execute(sql: """
                DELETE FROM \(StoreSchema.parents) WHERE job = ?1 AND account = ?2
                  AND parent_id NOT IN (SELECT id FROM "\(table)" WHERE account = ?2)
                """, arguments: [child, account])
            return try String.fetchAll(db, sql: """
                SELECT p.parent_id FROM \(StoreSchema.parents) p
                JOIN "\(table)" t ON t.account = p.account AND t.id = p.parent_id
                WHERE p.job = ? AND p.account = ? ORDER BY t.position, t.id
                """, arguments: [child, account])
        }
    }

    /// The stored JSON of one record, if it is there.
    package func record(table: String, account: String, id: String) async throws -> String? {
        try await pool.read { db in
            try String.fetchOne(db, sql: "SELECT record FROM \"\(table)\" WHERE account = ? AND id = ?", arguments: [account, id])
        }
    }

    /// The child job `child` walked the parent `id`: done (nil), or failed, to be walked
    /// again by the next run.
    package func settleParent(child: String, account: String, id: String, error: String?) async throws {
        try await pool.write { db in
            if let error {
                try db.execute(sql: """
                    UPDATE \(StoreSchema.parents) SET state = 'failed', error = ? WHERE job = ? AND account = ? AND parent_id = ?
                    """, arguments: [error, child, account, id])
            } else {
                try db.execute(sql: "DELETE FROM \(StoreSchema.parents) WHERE job = ? AND account = ? AND parent_id = ?",
                               arguments: [child, account, id])
            }
        }
    }

    /// The parent ids the records of a child job's `table` and `account` carry.
    package func parentIDs(table: String, account: String) async throws -> [String] {
        try await pool.read { db in
            try String.fetchAll(db, sql: """
                SELECT DISTINCT parent_id FROM "\(table)" WHERE account = ? AND parent_id IS NOT NULL
                """, arguments: [account])
        }
    }

    /// Which of `ids` are the ids of records of `table` and `account`.
    package func existing(_ ids: [String], table: String, account: String) async throws -> Set<String> {
        try await pool.read { db in
            guard try db.tableExists(table) else { return [] }
            var found: Set<String> = []
            // A few hundred at a time: SQLite's limit on bound values.
            for start in stride(from: 0, to: ids.count, by: 500) {
                let chunk = Array(ids[start ..< min(start + 500, ids.count)])
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                found.formUnion(try String.fetchAll(db, sql: """
                    SELECT id FROM "\(table)" WHERE account = ? AND id IN (\(marks))
                    """, arguments: StatementArguments([account] + chunk)))
            }
            return found
        }
    }

    /// Deletes the records of a child job's `table` and `account` whose parent is one of
    /// `parents` (gone: deleted or pruned); says how many.
    package func deleteChildren(of parents: [String], table: String, account: String) async throws -> Int {
        try await pool.write { db in
            var deleted = 0
            for parent in parents {
                try db.execute(sql: "DELETE FROM \"\(table)\" WHERE account = ? AND parent_id = ?", arguments: [account, parent])
                deleted += db.changesCount
            }
            return deleted
        }
    }

    /// `prune` for one parent's children: deletes the records of `parent` not seen since `time`.
    package func pruneChildren(table: String, account: String, parent: String, notSeenSince time: String) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: """
                DELETE FROM "\(table)" WHERE account = ? AND parent_id = ? AND last_seen < ?
                """, arguments: [account, parent, time])
            return db.changesCount
        }
    }

    /// What the child job `job`'s file knows of its parents' queue: the time of the parent's
    /// mark it saw (`parents_queue_seen`), and the mark an earlier version kept here instead
    /// (`parents_queued_at`), if any.
    package func parentsQueueSeen(job: String, account: String) async throws -> (seen: String?, earlier: String?) {
        try await pool.read { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT parents_queue_seen, parents_queued_at FROM \(StoreSchema.walks) WHERE job = ? AND account = ?
                """, arguments: [job, account])
            return (row?["parents_queue_seen"], row?["parents_queued_at"])
        }
    }

    /// Notes that the child job `job` saw its parents all queued at `time`; the mark of an
    /// earlier version goes, so that only the parent's file says whether they were queued.
    package func noteParentsQueued(job: String, account: String, at time: String) async throws {
        try await pool.write { db in
            try db.execute(sql: """
                UPDATE \(StoreSchema.walks) SET parents_queue_seen = ?, parents_queued_at = NULL WHERE job = ? AND account = ?
                """, arguments: [time, job, account])
        }
    }
}
