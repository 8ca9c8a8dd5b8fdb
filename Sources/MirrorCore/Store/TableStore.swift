import Foundation
import GRDB
import GRDBSQLite

/// One page of records ready to be stored, with the walk's checkpoint after it.
public struct PageCommit: Sendable {
    public struct Record: Sendable {
        public let id: String
        /// The record's compacted JSON inside `bytes`.
        public let range: Range<Int>
    }

    public var job: String
    public var account: String
    public var table: String
    public var url: RedactedURL
    /// The request body as shown (secrets masked); empty for GET.
    public var requestBody: String
    public var page: Int
    public var status: Int
    public var etag: String?
    public var lastModified: String?
    public var responseBytes: Int
    /// The compacted response the records point into.
    public var bytes: [UInt8]
    public var records: [Record]
    /// Entries of the response's records array, stored ones and rejected ones.
    public var elements: Int
    /// The response's `stop.last_page` value.
    public var lastPage: Int?
    /// The response's `stop.total` value.
    public var total: Int?
    /// URLs of files the records point to (`downloads`), registered with the page.
    public var files: [RedactedURL] = []
    public var onChange: JobSpec.OnChange
    /// Position of the first record: the walk's running count.
    public var firstPosition: Int
    /// Where the walk goes after this page.
    public var nextPage: Int?
    /// Redacted: a checkpoint holding a secret cannot be resumed from.
    public var nextURL: String?
    public var nextCursor: String?
    public var time: String
}

/// A page served again from what was stored: a 304 answer, or a page within
/// `refresh_after`. Its records are seen again; nothing of them is rewritten.
public struct PageReplay: Sendable {
    public var job: String
    public var account: String
    public var table: String
    public var stored: StoredPage
    public var firstPosition: Int
    /// A 304 refreshes the page's fetch time and validators; a skipped page keeps them.
    public var revalidated: (etag: String?, lastModified: String?)?
    public var nextPage: Int?
    public var nextURL: String?
    public var nextCursor: String?
    public var time: String
}

/// A page as `_mirror_pages` keeps it: enough to walk past it without its body.
public struct StoredPage: Sendable, Equatable {
    public var url: String
    public var requestBody: String
    public var page: Int
    public var status: Int
    public var etag: String?
    public var lastModified: String?
    public var fetchedAt: String
    public var elements: Int
    public var ids: [String]
    /// As stored: redacted, so one holding a mask cannot be followed.
    public var nextURL: String?
    public var nextCursor: String?
    public var lastPage: Int?
    public var total: Int?

    /// Whether the walk can go on from this copy alone.
    public var isReplayable: Bool {
        !(nextURL?.contains(Redactor.mask) ?? false) && !(nextCursor?.contains(Redactor.mask) ?? false)
    }
}

/// A replayed page whose records are no longer all stored: it must be fetched whole.
public struct ReplayMissingRecords: Error, Sendable {
    public let missing: Int
}

/// Where a job's walk starts: page `from` of a new walk, or the checkpoint of one that
/// failed or was killed.
public struct WalkStart: Sendable, Equatable {
    public var startedAt: String
    /// The `{page}` value to fetch next; nil for a new walk.
    public var page: Int?
    public var nextURL: String?
    public var cursor: String?
    public var position: Int

    public var isResumed: Bool { page != nil }

    /// A redacted URL or cursor cannot be requested again.
    var isResumable: Bool {
        !(nextURL?.contains(Redactor.mask) ?? false) && !(cursor?.contains(Redactor.mask) ?? false)
    }
}

public struct CommitCounts: Sendable, Equatable {
    public var new = 0
    public var updated = 0
    public var unchanged = 0
    /// Files of the page not downloaded yet (or whose download is gone from disk).
    public var pendingFiles: [RedactedURL] = []
    public init() {}
}

/// The outcome of one job in one run, as `_mirror_runs` keeps it.
public struct RunRecord: Sendable {
    public var job: String
    public var account: String
    public var table: String
    public var startedAt: String
    public var finishedAt: String
    public var result: JobResult
    public var stopReason: String
    public var pages: Int
    public var pagesNotModified: Int
    public var pagesSkipped: Int
    public var counts: CommitCounts
    public var rejected: Int
    public var pruned: Int
    public var error: String?
    public var filesDownloaded = 0
    public var filesFailed = 0
}

/// Where a walk puts its pages: the SQLite file of a run, or nowhere (`verify`).
public protocol PageStore: Sendable {
    /// Stores a page's records with the walk's checkpoint, atomically.
    func commit(_ page: PageCommit) async throws -> CommitCounts
    /// Sees a stored page's records again; throws `ReplayMissingRecords` if some are gone.
    func replay(_ replay: PageReplay) async throws -> CommitCounts
    /// The stored copy of a request's page, if there is one to replay.
    func storedPage(job: String, account: String, url: String, requestBody: String) async throws -> StoredPage?
}

/// One SQLite file of the output folder: its record tables and bookkeeping.
/// GRDB's pool serializes writes; each page is one `write` transaction. Every access from
/// a task is GRDB's async one: it suspends instead of blocking the cooperative pool, and
/// a cancelled task's transaction is rolled back, never half stored.
public final class TableStore: PageStore {
    public let path: String
    private let pool: DatabasePool

    public init(path: String) throws {
        self.path = path
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            // WAL keeps every page atomic; NORMAL skips the fsync of each commit.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try StoreSchema.migrator.migrate(pool)
    }

    public func prepare(table: String) async throws {
        try await pool.write { db in try db.execute(sql: StoreSchema.createTable(table)) }
    }

    /// Resumes the job's walk where it stopped if its last walk failed or was killed
    /// after storing pages (unless `fresh`); otherwise starts a new walk whose position
    /// count restarts at 0.
    public func startWalk(job: String, account: String, table: String, at time: String, fresh: Bool) async throws -> WalkStart {
        try await pool.write { db in
            if !fresh, let row = try Row.fetchOne(db, sql: """
                SELECT started_at, next_page, next_url, next_cursor, position FROM \(StoreSchema.walks)
                WHERE job = ? AND account = ? AND table_name = ? AND state IN ('failed', 'interrupted', 'running')
                  AND next_page IS NOT NULL
                """, arguments: [job, account, table]) {
                let start = WalkStart(startedAt: row["started_at"], page: row["next_page"], nextURL: row["next_url"],
                                      cursor: row["next_cursor"], position: row["position"])
                if start.isResumable {
                    try db.execute(sql: "UPDATE \(StoreSchema.walks) SET state = 'running', updated_at = ? WHERE job = ? AND account = ?",
                                   arguments: [time, job, account])
                    return start
                }
            }
            try db.execute(sql: """
                INSERT INTO \(StoreSchema.walks) (job, account, table_name, state, started_at, updated_at, pages, next_page, next_url, position)
                VALUES (?, ?, ?, 'running', ?, ?, 0, NULL, NULL, 0)
                ON CONFLICT (job, account) DO UPDATE SET table_name = excluded.table_name, state = 'running',
                  started_at = excluded.started_at, updated_at = excluded.updated_at, pages = 0,
                  next_page = NULL, next_url = NULL, next_cursor = NULL, position = 0
                """, arguments: [job, account, table, time, time])
            return WalkStart(startedAt: time, page: nil, nextURL: nil, cursor: nil, position: 0)
        }
    }

    /// How a walk ended, as `_mirror_walks.state` keeps it (`running` while it goes on).
    public enum WalkEnd: String, Sendable {
        /// It saw everything: a stop condition or `pages.to`.
        case complete
        /// Cut by `--max-pages`.
        case incomplete
        case failed
        /// Stopped by a signal.
        case interrupted
    }

    public func finishWalk(job: String, account: String, state: WalkEnd, at time: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "UPDATE \(StoreSchema.walks) SET state = ?, updated_at = ? WHERE job = ? AND account = ?",
                           arguments: [state.rawValue, time, job, account])
        }
    }

    /// Stores a page's records, its `_mirror_pages` row and the walk checkpoint in one
    /// transaction.
    public func commit(_ page: PageCommit) async throws -> CommitCounts {
        try await pool.write { db in
            var counts = CommitCounts()
            let table = page.table
            let insert = try db.cachedStatement(sql: """
                INSERT INTO "\(table)" (account, id, record, position, first_seen, last_seen)
                VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (account, id) DO NOTHING
                """)
            let update = try db.cachedStatement(sql: """
                UPDATE "\(table)" SET record = ?3, position = ?4, last_seen = ?5
                WHERE account = ?1 AND id = ?2 AND record <> ?3
                """)
            let touch = try db.cachedStatement(sql: """
                UPDATE "\(table)" SET position = ?4, last_seen = ?5 WHERE account = ?1 AND id = ?2
                """)
            let connection = db.sqliteConnection
            try page.bytes.withUnsafeBufferPointer { buffer in
                var position = page.firstPosition
                for record in page.records {
                    let json = UnsafeBufferPointer(rebasing: buffer[record.range])
                    let bind = { (statement: Statement) in
                        let raw = statement.sqliteStatement
                        sqlite3_reset(raw)
                        Raw.bind(raw, 1, page.account)
                        Raw.bind(raw, 2, record.id)
                        sqlite3_bind_text(raw, 3, UnsafeRawPointer(json.baseAddress!).assumingMemoryBound(to: CChar.self),
                                          Int32(json.count), Raw.transient)
                        sqlite3_bind_int64(raw, 4, Int64(position))
                        Raw.bind(raw, 5, page.time)
                    }
                    bind(insert)
                    try Raw.step(insert.sqliteStatement, db: connection)
                    if sqlite3_changes(connection) == 1 {
                        counts.new += 1
                    } else {
                        var changed = false
                        if page.onChange == .replace {
                            bind(update)
                            try Raw.step(update.sqliteStatement, db: connection)
                            changed = sqlite3_changes(connection) == 1
                        }
                        if changed {
                            counts.updated += 1
                        } else {
                            bind(touch)
                            try Raw.step(touch.sqliteStatement, db: connection)
                            counts.unchanged += 1
                        }
                    }
                    position += 1
                }
            }
            for statement in [insert, update, touch] {
                sqlite3_reset(statement.sqliteStatement)
                sqlite3_clear_bindings(statement.sqliteStatement)
            }
            var ids: [UInt8] = [UInt8(ascii: "[")]
            for (index, record) in page.records.enumerated() {
                if index > 0 { ids.append(UInt8(ascii: ",")) }
                JSONText.appendQuoted(record.id, to: &ids)
            }
            ids.append(UInt8(ascii: "]"))
            try db.cachedStatement(sql: """
                INSERT INTO \(StoreSchema.pages) (job, account, url, body, page, status, etag, last_modified, records, bytes,
                  fetched_at, elements, ids, next_url, next_cursor, last_page, total)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (job, account, url, body) DO UPDATE SET page = excluded.page, status = excluded.status,
                  etag = excluded.etag, last_modified = excluded.last_modified, records = excluded.records,
                  bytes = excluded.bytes, fetched_at = excluded.fetched_at, elements = excluded.elements, ids = excluded.ids,
                  next_url = excluded.next_url, next_cursor = excluded.next_cursor, last_page = excluded.last_page,
                  total = excluded.total
                """).execute(arguments: [page.job, page.account, page.url.description, page.requestBody, page.page, page.status,
                                 page.etag, page.lastModified, page.records.count, page.responseBytes, page.time,
                                 page.elements, String(decoding: ids, as: UTF8.self), page.nextURL, page.nextCursor,
                                 page.lastPage, page.total])
            try Self.checkpoint(db, job: page.job, account: page.account, time: page.time, nextPage: page.nextPage,
                                nextURL: page.nextURL, nextCursor: page.nextCursor,
                                position: page.firstPosition + page.records.count)
            if !page.files.isEmpty {
                counts.pendingFiles = try registerFiles(page.files, job: page.job, time: page.time, db: db)
            }
            return counts
        }
    }

    private static func checkpoint(_ db: Database, job: String, account: String, time: String, nextPage: Int?,
                                   nextURL: String?, nextCursor: String?, position: Int) throws {
        try db.cachedStatement(sql: """
            UPDATE \(StoreSchema.walks) SET updated_at = ?, pages = pages + 1, next_page = ?, next_url = ?, next_cursor = ?, position = ?
            WHERE job = ? AND account = ?
            """).execute(arguments: [time, nextPage, nextURL, nextCursor, position, job, account])
    }

    /// The stored copy of a request's page, if it was stored whole with its ids.
    public func storedPage(job: String, account: String, url: String, requestBody: String) async throws -> StoredPage? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT page, status, etag, last_modified, fetched_at, elements, ids, next_url, next_cursor, last_page, total
                FROM \(StoreSchema.pages) WHERE job = ? AND account = ? AND url = ? AND body = ? AND ids IS NOT NULL
                """, arguments: [job, account, url, requestBody]) else { return nil }
            let idsText: String = row["ids"]
            let ids = try idsText.utf8.withContiguousStorageIfAvailable { try JSONDocument(parsing: UnsafeRawBufferPointer($0)) }
                .map { document in document.root.elements.compactMap(\.stringValue) } ?? []
            return StoredPage(url: url, requestBody: requestBody, page: row["page"], status: row["status"], etag: row["etag"],
                              lastModified: row["last_modified"], fetchedAt: row["fetched_at"], elements: row["elements"],
                              ids: ids, nextURL: row["next_url"], nextCursor: row["next_cursor"], lastPage: row["last_page"],
                              total: row["total"])
        }
    }

    /// Sees a stored page's records again (position and `last_seen` move on) and moves
    /// the checkpoint past it, in one transaction. Throws `ReplayMissingRecords`, storing
    /// nothing, if some of its records are gone.
    public func replay(_ replay: PageReplay) async throws -> CommitCounts {
        try await pool.write { db in
            let touch = try db.cachedStatement(sql: """
                UPDATE "\(replay.table)" SET position = ?1, last_seen = ?2 WHERE account = ?3 AND id = ?4
                """)
            let raw = touch.sqliteStatement
            var position = replay.firstPosition
            var missing = 0
            for id in replay.stored.ids {
                sqlite3_reset(raw)
                sqlite3_bind_int64(raw, 1, Int64(position))
                Raw.bind(raw, 2, replay.time)
                Raw.bind(raw, 3, replay.account)
                Raw.bind(raw, 4, id)
                try Raw.step(raw, db: db.sqliteConnection)
                if db.changesCount != 1 { missing += 1 }
                position += 1
            }
            sqlite3_reset(raw)
            sqlite3_clear_bindings(raw)
            if missing > 0 { throw ReplayMissingRecords(missing: missing) }
            if let validators = replay.revalidated {
                try db.execute(sql: """
                    UPDATE \(StoreSchema.pages) SET fetched_at = ?, etag = coalesce(?, etag), last_modified = coalesce(?, last_modified)
                    WHERE job = ? AND account = ? AND url = ? AND body = ?
                    """, arguments: [replay.time, validators.etag, validators.lastModified, replay.job, replay.account,
                                     replay.stored.url, replay.stored.requestBody])
            }
            try Self.checkpoint(db, job: replay.job, account: replay.account, time: replay.time, nextPage: replay.nextPage,
                                nextURL: replay.nextURL, nextCursor: replay.nextCursor, position: position)
            var counts = CommitCounts()
            counts.unchanged = replay.stored.ids.count
            return counts
        }
    }

    /// Registers the files a page points to; returns those still to download: never
    /// tried, failed, refused, or downloaded but since removed from disk or cut short.
    private func registerFiles(_ files: [RedactedURL], job: String, time: String, db: Database) throws -> [RedactedURL] {
        let register = try db.cachedStatement(sql: """
            INSERT INTO \(StoreSchema.files) (url, job, status, first_seen) VALUES (?, ?, 'pending', ?)
            ON CONFLICT (url) DO NOTHING
            """)
        let state = try db.cachedStatement(sql: "SELECT status, path, size FROM \(StoreSchema.files) WHERE url = ?")
        var pending: [RedactedURL] = []
        for url in files {
            // A file's URL is record data, stored verbatim in the record itself: kept as the
            // record holds it, so that a device can join on it.
            try register.execute(arguments: [url.real, job, time])
            let row = try Row.fetchOne(state, arguments: [url.real])
            // On disk whole: a file cut short (a power cut before the disk caught up) is fetched again.
            var info = stat()
            if let row, row["status"] == "ok", let path: String = row["path"], let size: Int = row["size"],
               stat((folder as NSString).appendingPathComponent(path), &info) == 0, Int(info.st_size) == size {
                continue
            }
            pending.append(url)
        }
        return pending
    }

    /// The folder the database file lives in: the output folder.
    var folder: String { (path as NSString).deletingLastPathComponent }

    /// Files of a job that an earlier run registered or tried and did not get.
    public func unfinishedFiles(job: String) async throws -> [String] {
        try await pool.read { db in
            try String.fetchAll(db, sql: """
                SELECT url FROM \(StoreSchema.files) WHERE job = ? AND status IN ('pending', 'failed') ORDER BY first_seen, url
                """, arguments: [job])
        }
    }

    /// Records how downloads ended, in one transaction.
    public func record(files: [FileOutcome]) async throws {
        guard !files.isEmpty else { return }
        try await pool.write { db in
            let update = try db.cachedStatement(sql: """
                UPDATE \(StoreSchema.files) SET status = ?, path = coalesce(?, path), size = coalesce(?, size),
                  content_type = coalesce(?, content_type), sha256 = coalesce(?, sha256), etag = ?, last_modified = ?,
                  http_status = ?, error = ?, attempts = attempts + 1, fetched_at = ?
                WHERE url = ?
                """)
            for file in files {
                try update.execute(arguments: [file.status.rawValue, file.path, file.size, file.contentType, file.sha256,
                                               file.etag, file.lastModified, file.httpStatus, file.error, file.time,
                                               file.url.real])
            }
        }
    }

    /// Deletes the records of `account` not seen since `time` (the walk's start).
    public func prune(table: String, account: String, notSeenSince time: String) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM \"\(table)\" WHERE account = ? AND last_seen < ?", arguments: [account, time])
            return db.changesCount
        }
    }

    public func record(run: RunRecord) async throws {
        try await pool.write { db in
            try db.execute(sql: """
                INSERT INTO \(StoreSchema.runs) (job, account, table_name, started_at, finished_at, result, stop_reason,
                  pages, pages_not_modified, pages_skipped, records_new, records_updated, records_unchanged,
                  records_rejected, records_pruned, error, files_downloaded, files_failed)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [run.job, run.account, run.table, run.startedAt, run.finishedAt, run.result.rawValue,
                                 run.stopReason, run.pages, run.pagesNotModified, run.pagesSkipped, run.counts.new,
                                 run.counts.updated, run.counts.unchanged, run.rejected, run.pruned, run.error,
                                 run.filesDownloaded, run.filesFailed])
        }
    }
}

/// Thin helpers over the C API for the per-record hot path.
enum Raw {
    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Binds the whole text, by its byte length: a NUL inside it is kept, not an end.
    static func bind(_ statement: OpaquePointer, _ index: Int32, _ text: String) {
        var text = text
        text.withUTF8 { bytes in
            guard let start = bytes.baseAddress else {
                _ = sqlite3_bind_text(statement, index, "", 0, transient)
                return
            }
            _ = sqlite3_bind_text(statement, index, UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self),
                                  Int32(bytes.count), transient)
        }
    }

    static func step(_ statement: OpaquePointer, db: OpaquePointer?) throws {
        let code = sqlite3_step(statement)
        guard code == SQLITE_DONE || code == SQLITE_ROW else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code),
                                message: db.map { String(cString: sqlite3_errmsg($0)) })
        }
    }
}
