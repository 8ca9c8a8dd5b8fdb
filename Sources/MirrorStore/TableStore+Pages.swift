import Foundation
import GRDB
import GRDBSQLite
import MirrorJSON
package import MirrorModel

extension TableStore {
    /// Stores a page's records, its `_mirror_pages` row and the walk checkpoint in one
    /// transaction.
    package func commit(_ page: PageCommit) async throws -> CommitCounts {
        defer { checkpointer.stored(bytes: page.responseBytes) }
        await catchUpIfDue()
        return try await pool.write { db in try write(page, db: db) }
    }

    /// Stores pages in order in one transaction, each one whole or not at all: a page that
    /// cannot be stored is rolled back to where it began, and the pages before it are
    /// committed (see `PagesCommitted`). One commit for several pages writes each database
    /// page that all of them change once, where a commit for each would write it again.
    /// A replay some of whose records are gone is rolled back too (`PagesCommitted.missingRecords`).
    package func commit(_ pages: [PageWrite]) async -> PagesCommitted {
        defer {
            checkpointer.stored(bytes: pages.reduce(0) { bytes, page in
                guard case let .fresh(page) = page else { return bytes }
                return bytes + page.responseBytes
            })
        }
        await catchUpIfDue()
        do {
            return try await pool.write { db in
                var committed = PagesCommitted()
                for page in pages {
                    do {
                        var counts = CommitCounts()
                        try db.inSavepoint {
                            switch page {
                            case let .fresh(page): counts = try write(page, db: db)
                            case let .replay(replay): counts = try Self.write(replay, db: db)
                            }
                            return .commit
                        }
                        committed.stored.append(counts)
                    } catch let missing as ReplayMissingRecords {
                        committed.missingRecords = missing.missing
                        break
                    } catch {
                        // An error that ended the transaction takes every page of it.
                        guard db.isInsideTransaction else { throw error }
                        committed.failure = "\(error)"
                        break
                    }
                }
                return committed
            }
        } catch {
            return PagesCommitted(stored: [], failure: "\(error)")
        }
    }

    /// Once in a while, copies what the checkpoints left before a commit (see `Checkpointer.catchUpDue`).
    private func catchUpIfDue() async {
        if checkpointer.catchUpDue() {
            // A copy that cannot be made is left to the next: nothing is lost.
            try? await pool.writeWithoutTransaction { db in try Self.checkpoint(db, mode: "PASSIVE") }
        }
    }

    /// Writes a page's records, its `_mirror_pages` row and the walk checkpoint, in the transaction of `db`.
    private func write(_ page: PageCommit, db: Database) throws -> CommitCounts {
        var counts = CommitCounts()
        let table = page.table
        // A child job's records carry their parent's id.
        let child = page.parentID != nil
        let update = try db.cachedStatement(sql: """
            UPDATE "\(table)" SET record = ?3, position = ?4, last_seen = ?5\(child ? ", parent_id = ?6" : "")
            WHERE account = ?1 AND id = ?2 AND record <> ?3
            """)
        let touch = try db.cachedStatement(sql: """
            UPDATE "\(table)" SET position = ?4, last_seen = ?5\(child ? ", parent_id = ?6" : "") WHERE account = ?1 AND id = ?2
            """)
        // Records new or changed, whose children are walked next (`parent`).
        var changedIDs: [String] = []
        // A child record stored before under another parent.
        let owner = child ? try db.cachedStatement(sql: """
            SELECT parent_id FROM "\(table)" WHERE account = ?1 AND id = ?2
            """) : nil
        let connection = db.sqliteConnection
        try page.records.withTexts { texts in
            let isNew = try Self.insertNew(texts, page: page, db: db)
            // New or changed, by index: the records whose mismatches count.
            var written = isNew
            // The records are bound where they lie in the page; nothing stays bound to it.
            defer {
                for statement in [update, touch] {
                    sqlite3_reset(statement.sqliteStatement)
                    sqlite3_clear_bindings(statement.sqliteStatement)
                }
            }
            for index in 0 ..< texts.count {
                let id = texts.id(index)
                if isNew[index] {
                    counts.new += 1
                    if !page.children.isEmpty { changedIDs.append(String(decoding: id, as: UTF8.self)) }
                    continue
                }
                let bind = { (statement: Statement) in
                    let raw = statement.sqliteStatement
                    sqlite3_reset(raw)
                    Raw.bind(raw, 1, page.account)
                    Raw.bind(raw, 2, unmoving: id)
                    Raw.bind(raw, 3, unmoving: texts.json(index))
                    sqlite3_bind_int64(raw, 4, Int64(page.firstPosition + index))
                    Raw.bind(raw, 5, page.time)
                    if let parentID = page.parentID { Raw.bind(raw, 6, parentID) }
                }
                if let owner, let parentID = page.parentID {
                    try Self.noteMove(id, to: parentID, account: page.account, owner: owner, counts: &counts)
                }
                var changed = false
                if page.onChange == .replace {
                    bind(update)
                    try Raw.step(update.sqliteStatement, db: connection)
                    changed = sqlite3_changes(connection) == 1
                }
                if changed {
                    written[index] = true
                    counts.updated += 1
                    if !page.children.isEmpty { changedIDs.append(String(decoding: id, as: UTF8.self)) }
                } else {
                    bind(touch)
                    try Raw.step(touch.sqliteStatement, db: connection)
                    counts.unchanged += 1
                }
            }
            page.mismatches.tally(into: &counts.mismatches) { written[$0] }
        }
        if page.shared { try Self.own(page, db: db) }
        if !changedIDs.isEmpty {
            try Self.queueParents(changedIDs, children: page.children, account: page.account, time: page.time, db: db)
        }
        if !page.deleted.isEmpty {
            counts.deleted = try Self.delete(page.deleted, table: table, account: page.account, shared: page.shared, db: db)
        }
        if let highWater = page.highWater { try Self.raise(highWater, job: page.job, account: page.account, db: db) }
        let pageRow = try db.cachedStatement(sql: """
            INSERT INTO \(StoreSchema.pages) (job, account, url, body, page, status, etag, last_modified, records, bytes,
              fetched_at, elements, ids, next_url, next_cursor, last_page, total, next_cursor_is_number,
              table_name, envelope, records_at, request_key, headers, has_more)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (job, account, url, body) DO UPDATE SET page = excluded.page, status = excluded.status,
              etag = excluded.etag, last_modified = excluded.last_modified, records = excluded.records,
              bytes = excluded.bytes, fetched_at = excluded.fetched_at, elements = excluded.elements, ids = excluded.ids,
              next_url = excluded.next_url, next_cursor = excluded.next_cursor, last_page = excluded.last_page,
              total = excluded.total, next_cursor_is_number = excluded.next_cursor_is_number,
              table_name = excluded.table_name, envelope = excluded.envelope, records_at = excluded.records_at,
              request_key = excluded.request_key, headers = excluded.headers, has_more = excluded.has_more
            """)
        try pageRow.setArguments([page.job, page.account, page.url.description, page.requestBody, page.page, page.status,
                                  page.etag, page.lastModified, page.records.count, page.responseBytes, page.time,
                                  page.elements, nil, page.nextURL, page.nextCursor, page.lastPage, page.total,
                                  page.nextCursorIsNumber, table, nil, page.envelope?.recordsAt,
                                  page.envelope.map { _ in PageRequest(url: page.url.description).key },
                                  page.envelope?.headersJSON, page.hasMore])
        // The ids and the envelope, JSON texts as long as the page, are bound without a copy.
        let envelope = page.envelope?.text ?? []
        try page.records.idsJSON.withUnsafeBufferPointer { ids in
            try envelope.withUnsafeBufferPointer { envelopeText in
                defer {
                    sqlite3_reset(pageRow.sqliteStatement)
                    sqlite3_clear_bindings(pageRow.sqliteStatement)
                }
                Raw.bind(pageRow.sqliteStatement, 13, unmoving: ids)
                if page.envelope != nil { Raw.bind(pageRow.sqliteStatement, 20, unmoving: envelopeText) }
                try Raw.step(pageRow.sqliteStatement, db: connection)
            }
        }
        if page.parentID == nil {
            try Self.checkpoint(db, job: page.job, account: page.account, time: page.time, nextPage: page.nextPage,
                                nextURL: page.nextURL, nextCursor: page.nextCursor, cursorIsNumber: page.nextCursorIsNumber,
                                position: page.firstPosition + page.records.count)
        }
        if !page.files.isEmpty {
            counts.pendingFiles = try registerFiles(page.files, job: page.job, time: page.time, db: db)
        }
        return counts
    }

    /// Records a statement inserts at most: one statement for many rows runs the change
    /// feed's trigger program and keeps its statement journal once, not once a record,
    /// which halves SQLite's work for a page of new records.
    static let insertBatch = 100

    /// Inserts the records of `texts` whose ids the table lacks, `insertBatch` to a
    /// statement, and says which they were, by index.
    private static func insertNew(_ texts: PageRecords.Texts, page: PageCommit, db: Database) throws -> [Bool] {
        var isNew = [Bool](repeating: false, count: texts.count)
        let connection = db.sqliteConnection
        var first = 0
        while first < texts.count {
            let rows = min(insertBatch, texts.count - first)
            let statement = try db.cachedStatement(sql: insertSQL(table: page.table, rows: rows, child: page.parentID != nil))
            let raw = statement.sqliteStatement
            defer {
                sqlite3_reset(raw)
                sqlite3_clear_bindings(raw)
            }
            Raw.bind(raw, 1, page.account)
            Raw.bind(raw, 2, page.time)
            if let parentID = page.parentID { Raw.bind(raw, 3, parentID) }
            for row in 0 ..< rows {
                let index = first + row
                let parameter = Int32(insertShared + 3 * row)
                Raw.bind(raw, parameter + 1, unmoving: texts.id(index))
                Raw.bind(raw, parameter + 2, unmoving: texts.json(index))
                sqlite3_bind_int64(raw, parameter + 3, Int64(page.firstPosition + index))
            }
            // One row for each record inserted: its position, which says its index.
            while true {
                let code = sqlite3_step(raw)
                guard code == SQLITE_ROW else {
                    guard code == SQLITE_DONE else {
                        throw DatabaseError(resultCode: ResultCode(rawValue: code),
                                            message: String(cString: sqlite3_errmsg(connection)))
                    }
                    break
                }
                let index = Int(sqlite3_column_int64(raw, 0)) - page.firstPosition
                if isNew.indices.contains(index) { isNew[index] = true }
            }
            first += rows
        }
        return isNew
    }

    /// Parameters every row of an insert shares: account, time, parent id.
    private static let insertShared = 3

    /// `INSERT` of `rows` records, new ones only, giving back the position of each one inserted.
    private static func insertSQL(table: String, rows: Int, child: Bool) -> String {
        var sql = """
            INSERT INTO "\(table)" (account, id, record, position, first_seen, last_seen\(child ? ", parent_id" : "")) VALUES
            """
        sql.reserveCapacity(sql.utf8.count + rows * 40 + 64)
        for row in 0 ..< rows {
            let parameter = insertShared + 3 * row
            sql += row == 0 ? " " : ", "
            sql += "(?1, ?\(parameter + 1), ?\(parameter + 2), ?\(parameter + 3), ?2, ?2\(child ? ", ?3" : ""))"
        }
        sql += " ON CONFLICT (account, id) DO NOTHING RETURNING position"
        return sql
    }

    /// Keeps the empty page that ended a walk (see `EndPage`).
    package func keepEndPage(_ page: EndPage) async throws {
        try await pool.write { db in
            try db.execute(sql: """
                INSERT INTO \(StoreSchema.pages) (job, account, url, body, page, status, records, bytes, fetched_at, elements,
                  table_name, envelope, records_at, request_key, headers)
                VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, 0, ?, ?, ?, ?, ?)
                ON CONFLICT (job, account, url, body) DO UPDATE SET page = excluded.page, status = excluded.status,
                  etag = NULL, last_modified = NULL, records = 0, bytes = excluded.bytes, fetched_at = excluded.fetched_at,
                  elements = 0, ids = NULL, next_url = NULL, next_cursor = NULL, last_page = NULL, total = NULL,
                  next_cursor_is_number = 0, table_name = excluded.table_name, envelope = excluded.envelope,
                  records_at = excluded.records_at, request_key = excluded.request_key, headers = excluded.headers,
                  has_more = NULL
                """, arguments: [page.job, page.account, page.url.description, page.requestBody, page.page, page.status,
                                 page.responseBytes, page.time, page.table, String(decoding: page.envelope.text, as: UTF8.self),
                                 page.envelope.recordsAt, PageRequest(url: page.url.description).key,
                                 page.envelope.headersJSON])
        }
    }

    private static func checkpoint(_ db: Database, job: String, account: String, time: String, nextPage: Int?,
                                   nextURL: String?, nextCursor: String?, cursorIsNumber: Bool, position: Int) throws {
        try db.cachedStatement(sql: """
            UPDATE \(StoreSchema.walks) SET updated_at = ?, pages = pages + 1, next_page = ?, next_url = ?, next_cursor = ?,
              next_cursor_is_number = ?, position = ?
            WHERE job = ? AND account = ?
            """).execute(arguments: [time, nextPage, nextURL, nextCursor, cursorIsNumber, position, job, account])
    }

    /// The stored copy of a request's page, if it was stored whole with its ids and its
    /// envelope: a page stored before envelopes were kept is fetched whole once, to keep one.
    package func storedPage(job: String, account: String, url: String, requestBody: String) async throws -> StoredPage? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT page, status, etag, last_modified, fetched_at, elements, ids, next_url, next_cursor, last_page, total,
                  next_cursor_is_number, has_more
                FROM \(StoreSchema.pages) WHERE job = ? AND account = ? AND url = ? AND body = ? AND ids IS NOT NULL
                  AND envelope IS NOT NULL
                """, arguments: [job, account, url, requestBody]) else { return nil }
            let idsText: String = row["ids"]
            let ids = try idsText.utf8.withContiguousStorageIfAvailable { try JSONDocument(parsing: UnsafeRawBufferPointer($0)) }
                .map { document in document.root.elements.compactMap(\.stringValue) } ?? []
            return StoredPage(url: url, requestBody: requestBody, page: row["page"], status: row["status"], etag: row["etag"],
                              lastModified: row["last_modified"], fetchedAt: row["fetched_at"], elements: row["elements"],
                              ids: ids, nextURL: row["next_url"], nextCursor: row["next_cursor"],
                              nextCursorIsNumber: row["next_cursor_is_number"], lastPage: row["last_page"],
                              total: row["total"], hasMore: row["has_more"])
        }
    }

    /// Sees a stored page's records again (position and `last_seen` move on) and moves
    /// the checkpoint past it, in one transaction. Throws `ReplayMissingRecords`, storing
    /// nothing, if some of its records are gone.
    package func replay(_ replay: PageReplay) async throws -> CommitCounts {
        try await pool.write { db in try Self.write(replay, db: db) }
    }

    /// Sees a stored page's records again and moves the checkpoint past it, in the
    /// transaction of `db`; throws `ReplayMissingRecords` if some of its records are gone.
    private static func write(_ replay: PageReplay, db: Database) throws -> CommitCounts {
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
        if !replay.child {
            try Self.checkpoint(db, job: replay.job, account: replay.account, time: replay.time, nextPage: replay.nextPage,
                                nextURL: replay.nextURL, nextCursor: replay.nextCursor,
                                cursorIsNumber: replay.nextCursorIsNumber, position: position)
        }
        var counts = CommitCounts()
        counts.unchanged = replay.stored.ids.count
        return counts
    }

    /// Counts a child record `id` stored before under another parent than `parentID`.
    private static func noteMove(_ id: UnsafeBufferPointer<UInt8>, to parentID: String, account: String, owner: Statement,
                                 counts: inout CommitCounts) throws {
        let text = String(decoding: id, as: UTF8.self)
        guard let before = try String?.fetchOne(owner, arguments: [account, text]) ?? nil, before != parentID else { return }
        counts.movedChildren += 1
        if counts.firstMovedChild == nil {
            counts.firstMovedChild = "'\(text)' of parent '\(parentID)' was parent '\(before)''s"
        }
    }

    /// Removes the records `ids` names; says how many there were.
    private static func delete(_ ids: [String], table: String, account: String, shared: Bool, db: Database) throws -> Int {
        let delete = try db.cachedStatement(sql: "DELETE FROM \"\(table)\" WHERE account = ? AND id = ?")
        let disown = shared ? try db.cachedStatement(sql: """
            DELETE FROM \(StoreSchema.owners) WHERE table_name = ? AND account = ? AND id = ?
            """) : nil
        var deleted = 0
        for id in ids {
            try delete.execute(arguments: [account, id])
            deleted += db.changesCount
            try disown?.execute(arguments: [table, account, id])
        }
        return deleted
    }

    /// Moves the walk's own high-water mark (the job's when the walk started, see `since`)
    /// up to `highWater` if it is higher. It becomes
    /// the job's when the walk completes (`finishWalk`): a walk cut short or failed, not
    /// resumed, must not move the next walk's `{since}` past pages it did not see.
    private static func raise(_ highWater: HighWater, job: String, account: String, db: Database) throws {
        let row = try Row.fetchOne(db, sql: """
            SELECT walk_high_water FROM \(StoreSchema.walks) WHERE job = ? AND account = ?
            """, arguments: [job, account])
        let current = (row?["walk_high_water"] as String?).flatMap(SinceValue.init(json:))
        if let current, SinceValue.compare(highWater.value, current) <= 0 { return }
        try db.execute(sql: "UPDATE \(StoreSchema.walks) SET walk_high_water = ? WHERE job = ? AND account = ?",
                       arguments: [highWater.value.json, job, account])
    }

    /// Notes the page's ids as its job's, in a table jobs share.
    private static func own(_ page: PageCommit, db: Database) throws {
        let note = try db.cachedStatement(sql: """
            INSERT INTO \(StoreSchema.owners) (table_name, account, job, id) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING
            """)
        let raw = note.sqliteStatement
        defer {
            sqlite3_reset(raw)
            sqlite3_clear_bindings(raw)
        }
        try page.records.forEach { id, _ in
            sqlite3_reset(raw)
            Raw.bind(raw, 1, page.table)
            Raw.bind(raw, 2, page.account)
            Raw.bind(raw, 3, page.job)
            Raw.bind(raw, 4, unmoving: id)
            try Raw.step(raw, db: db.sqliteConnection)
        }
    }
}
