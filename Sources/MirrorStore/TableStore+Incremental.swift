import GRDB
import MirrorJSON
package import MirrorModel

extension TableStore {
    /// The `{since}` is not a time, and `lookback` cannot move it back.
    struct NotATime: Error, CustomStringConvertible {
        package let value: String
        package var description: String {
            "'incremental.lookback' moves times back, but {since} would be '\(value)', which is not an ISO 8601 time"
        }
    }

    /// The `{since}` of `job`'s walk, kept with the walk: a resumed walk keeps the one it
    /// started with. A new walk takes the highest value of the incremental path among the
    /// job's stored records (found once by reading them, when the path is new, then kept
    /// up to date by every commit; the new walk's own mark starts from it), or the start of the last complete walk (`from:
    /// last_run`, to the second), moved back by `lookback`; `initial` when there is none,
    /// and with `refresh`. Nil for a job that is not incremental, and when there is no
    /// value at all.
    package func since(for job: JobSpec, resumed: Bool, refresh: Bool) async throws -> SinceValue? {
        guard let incremental = job.incremental else { return nil }
        return try await pool.write { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT since, high_water, high_water_path, last_complete_start FROM \(StoreSchema.walks)
                WHERE job = ? AND account = ?
                """, arguments: [job.name, job.account])
            if resumed {
                return (row?["since"] as String?).flatMap(SinceValue.init(json:))
            }
            var since: SinceValue?
            switch incremental.source {
            case let .path(path):
                var highest: SinceValue?
                if row?["high_water_path"] == path.description {
                    highest = (row?["high_water"] as String?).flatMap(SinceValue.init(json:))
                } else {
                    highest = try Self.highest(path, job: job, db: db)
                    try db.execute(sql: """
                        UPDATE \(StoreSchema.walks) SET high_water = ?, high_water_path = ? WHERE job = ? AND account = ?
                        """, arguments: [highest?.json, path.description, job.name, job.account])
                }
                since = highest
                // The walk's own mark starts at the job's: a page replayed from its stored copy
                // (a 304, `refresh_after`) holds no values, and a rerun that finds everything
                // as it was leaves the mark as it was.
                try db.execute(sql: "UPDATE \(StoreSchema.walks) SET walk_high_water = ? WHERE job = ? AND account = ?",
                               arguments: [highest?.json, job.name, job.account])
            case .lastRun:
                // `2026-11-24T10:15:00.123Z` → `2026-11-24T10:15:00Z`.
                since = (row?["last_complete_start"] as String?).map { start in
                    SinceValue(text: String(start.prefix(19)) + "Z", isNumber: false)
                }
            }
            if refresh { since = nil }
            if let value = since, let lookback = incremental.lookback {
                guard let moved = value.movedBack(by: lookback) else { throw NotATime(value: value.text) }
                since = moved
            }
            since = since ?? incremental.initial
            try db.execute(sql: "UPDATE \(StoreSchema.walks) SET since = ? WHERE job = ? AND account = ?",
                           arguments: [since?.json, job.name, job.account])
            return since
        }
    }

    /// A complete walk's own high-water mark becomes the job's, if it is higher.
    static func promoteHighWater(job: String, account: String, db: Database) throws {
        guard let row = try Row.fetchOne(db, sql: """
            SELECT high_water, walk_high_water FROM \(StoreSchema.walks) WHERE job = ? AND account = ?
            """, arguments: [job, account]),
            let walk = (row["walk_high_water"] as String?).flatMap(SinceValue.init(json:)) else { return }
        if let current = (row["high_water"] as String?).flatMap(SinceValue.init(json:)),
           SinceValue.compare(walk, current) <= 0 { return }
        try db.execute(sql: "UPDATE \(StoreSchema.walks) SET high_water = ? WHERE job = ? AND account = ?",
                       arguments: [walk.json, job, account])
    }

    /// Forgets the `_mirror_pages` rows of an incremental job's requests not made since
    /// `time` (its complete walk's start): their URLs hold a `{since}` no walk asks again.
    package func forgetPages(job: String, account: String, notFetchedSince time: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM \(StoreSchema.pages) WHERE job = ? AND account = ? AND fetched_at < ?",
                           arguments: [job, account, time])
        }
    }

    /// The highest value at `path` among the job's records: those of its account, and in a
    /// table jobs share, those it stored.
    private static func highest(_ path: JSONPath, job: JobSpec, db: Database) throws -> SinceValue? {
        let records = job.shareTable
            ? try String.fetchCursor(db, sql: """
                SELECT record FROM "\(job.table)" WHERE account = ?1 AND id IN (
                  SELECT id FROM \(StoreSchema.owners) WHERE table_name = ?2 AND account = ?1 AND job = ?3)
                """, arguments: [job.account, job.table, job.name])
            : try String.fetchCursor(db, sql: "SELECT record FROM \"\(job.table)\" WHERE account = ?", arguments: [job.account])
        var highest: SinceValue?
        while let record = try records.next() {
            guard let document = try? JSONDocument(parsing: Array(record.utf8)),
                  let value = document.root.value(at: path).flatMap(SinceValue.init) else { continue }
            highest = SinceValue.max(highest, value)
        }
        return highest
    }
}
