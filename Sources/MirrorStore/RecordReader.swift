import Foundation
package import GRDB
import GRDBSQLite
import MirrorModel

/// Which stored records to read, and in what order (`export`'s options).
package struct RecordSelection: Sendable {
    package enum Order: String, Sendable, CaseIterable {
        /// By account, then as the last walk saw them.
        case walk
        /// By id, descending: integer ids numerically, then other ids as text.
        case id
    }

    package var table: String
    package var account: String?
    /// Ids greater than this (SPEC §2's comparison: integers as integers, else text).
    package var sinceID: String?
    /// Ids up to and including this.
    package var maxID: String?
    package var limit: Int?
    package var offset: Int?
    package var order: Order = .walk
    /// Read the table's generated columns (a job's `columns`) with each record too.
    package var withColumns = false

    package init(table: String) { self.table = table }
}

/// A generated column a job made (`columns:`), as a reader sees it.
package struct TableColumn: Sendable, Equatable, Encodable {
    package let name: String
    /// The declared type (`TEXT`, `INTEGER`), nil for none (integer, real, no type).
    package let declaredType: String?
    /// Whether the column has its index (`index: true`).
    package let indexed: Bool

    package init(name: String, declaredType: String?, indexed: Bool) {
        self.name = name
        self.declaredType = declaredType
        self.indexed = indexed
    }
}

/// A record as the cursor holds it: its account, id and JSON straight from SQLite's row,
/// valid until the cursor moves.
package struct StoredRecord {
    package let account: UnsafeBufferPointer<UInt8>
    package let id: UnsafeBufferPointer<UInt8>
    package let record: UnsafeBufferPointer<UInt8>

    package init(account: UnsafeBufferPointer<UInt8>, id: UnsafeBufferPointer<UInt8>, record: UnsafeBufferPointer<UInt8>) {
        self.account = account
        self.id = id
        self.record = record
    }
}

/// Reads one database file's records, read-only, for `export`. Nothing is copied out of
/// SQLite's row buffers on the way.
package struct RecordReader: Sendable {
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package let description: String
        package init(description: String) { self.description = description }
    }

    package let database: String

    package init(database: String) {
        self.database = database
    }

    /// The database file in `folder` that holds `table`: `<table>.sqlite` first, then the
    /// others in name order, whatever their names (`items.db`). When none does, the error
    /// lists the tables there are, or says that nothing was stored yet.
    package static func locate(table: String, in folder: String) throws(Failure) -> String {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw Failure(description: "no output folder '\(folder)': run `mirror run` first, or name the folder with --output")
        }
        let databases = Self.databases(in: folder)
        let conventional = "\(table).sqlite"
        var tables: [String] = []
        for name in databases.filter({ $0 == conventional }) + databases.filter({ $0 != conventional }) {
            let path = (folder as NSString).appendingPathComponent(name)
            guard let held = try? recordTables(at: path) else { continue }
            if held.contains(table) { return path }
            tables += held
        }
        if tables.isEmpty {
            throw Failure(description: "no table '\(table)': '\(folder)' holds no records yet: run `mirror run` first, "
                + "or name the folder with --output")
        }
        throw Failure(description: "no table '\(table)' in '\(folder)'; its tables: \(Set(tables).sorted().joined(separator: ", "))")
    }

    /// The SQLite files of a folder (see `DatabaseFiles`).
    package static func databases(in folder: String) -> [String] {
        DatabaseFiles.databases(in: folder)
    }

    /// A database's record tables: all but SQLite's and mirror's own.
    static func recordTables(at path: String) throws -> [String] {
        try DatabaseQueue(path: path, configuration: readOnly).read { db in
            try String.fetchAll(db, sql: StoreSchema.recordTables)
        }
    }

    /// Whether the database at `path` has the record table `table`; false for a file that
    /// is no database.
    package static func holds(table: String, database path: String) -> Bool {
        (try? recordTables(at: path).contains(table)) ?? false
    }

    /// How every reader opens a database: read-only, waiting up to 10 s for a lock.
    static var readOnly: Configuration {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        return configuration
    }

    /// Calls `body` with a cursor over the selected records, inside one read transaction:
    /// a run writing meanwhile is not seen half-way.
    package func read<T>(_ selection: RecordSelection, _ body: (inout RecordCursor) throws -> T) throws -> T {
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: database, configuration: Self.readOnly)
        } catch {
            throw Failure(description: "cannot open '\(database)': \(error)")
        }
        return try queue.read { db in
            guard try db.tableExists(selection.table) else {
                throw Failure(description: "no table '\(selection.table)' in '\(database)'")
            }
            // Ids reach the function as blobs: text would be cut at a NUL.
            db.add(function: DatabaseFunction("mirror_id_cmp", argumentCount: 2, pure: true) { values in
                guard let a = Data.fromDatabaseValue(values[0]), let b = Data.fromDatabaseValue(values[1]) else { return nil }
                return IDOrder.compare(String(decoding: a, as: UTF8.self), String(decoding: b, as: UTF8.self))
            })
            db.add(collation: DatabaseCollation("mirror_id") { a, b in
                let order = IDOrder.collate(a, b)
                return order < 0 ? .orderedAscending : order > 0 ? .orderedDescending : .orderedSame
            })
            let children = try db.columns(in: selection.table).contains { $0.name == "parent_id" }
            let columns = selection.withColumns ? try Self.columns(of: selection.table, db: db) : []
            let (sql, arguments) = Self.query(selection, children: children, columns: columns.map(\.name))
            let statement = try db.makeStatement(sql: sql)
            try statement.setArguments(arguments)
            let files = try db.tableExists(StoreSchema.files)
                ? db.makeStatement(sql: StoreSchema.filePath)
                : nil
            var cursor = RecordCursor(statement: statement, files: files, database: database, columns: columns)
            defer { cursor.rewind() }
            return try body(&cursor)
        }
    }

    /// The generated columns mirror made in `table` (`_mirror_columns`), in the table's order;
    /// none in a database without them.
    package func columns(of table: String) throws -> [TableColumn] {
        do {
            return try DatabaseQueue(path: database, configuration: Self.readOnly).read { try Self.columns(of: table, db: $0) }
        } catch {
            throw Failure(description: "cannot read the columns of '\(table)' in '\(database)': \(error)")
        }
    }

    static func columns(of table: String, db: Database) throws -> [TableColumn] {
        guard try db.tableExists(StoreSchema.columns) else { return [] }
        return try Row.fetchAll(db, sql: """
            SELECT c.name, c.type,
              EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?1 || '.' || c.name AND tbl_name = ?1) AS indexed
            FROM pragma_table_xinfo(?1) c
            WHERE c.hidden IN (2, 3) AND c.name IN (SELECT name FROM \(StoreSchema.columns) WHERE table_name = ?1)
            ORDER BY c.cid
            """, arguments: [table]).map { row in
            let type: String = row["type"]
            return TableColumn(name: row["name"], declaredType: type.isEmpty ? nil : type, indexed: row["indexed"])
        }
    }

    /// The export's query; a child job's table (`children`) lists each parent's children
    /// together, in their walk order. `columns` are selected after the record.
    package static func query(_ selection: RecordSelection, children: Bool = false, columns: [String] = []) -> (String, StatementArguments) {
        let extra = columns.map { ", " + $0.quotedDatabaseIdentifier }.joined()
        var sql = "SELECT account, id, record\(extra) FROM \"\(selection.table)\""
        var conditions: [String] = []
        var arguments: StatementArguments = []
        if let account = selection.account {
            conditions.append("account = ?")
            _ = arguments.append(contentsOf: [account])
        }
        if let since = selection.sinceID {
            conditions.append("mirror_id_cmp(CAST(id AS BLOB), CAST(? AS BLOB)) > 0")
            _ = arguments.append(contentsOf: [since])
        }
        if let max = selection.maxID {
            conditions.append("mirror_id_cmp(CAST(id AS BLOB), CAST(? AS BLOB)) <= 0")
            _ = arguments.append(contentsOf: [max])
        }
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        switch selection.order {
        case .walk: sql += children ? " ORDER BY account, parent_id, position" : " ORDER BY account, position"
        case .id: sql += " ORDER BY id COLLATE mirror_id DESC, account"
        }
        if selection.limit != nil || selection.offset != nil {
            sql += " LIMIT ? OFFSET ?"
            _ = arguments.append(contentsOf: [selection.limit ?? -1, selection.offset ?? 0])
        }
        return (sql, arguments)
    }
}

/// Steps through selected records; `rewind` starts again from the first.
package struct RecordCursor {
    private let statement: Statement
    /// Looks up downloaded files; nil when the database has none.
    private let files: Statement?
    private let database: String
    /// The generated columns read with each record (`RecordSelection.withColumns`).
    package let columns: [TableColumn]

    package init(statement: Statement, files: Statement?, database: String, columns: [TableColumn] = []) {
        self.statement = statement
        self.files = files
        self.database = database
        self.columns = columns
    }

    /// The value of generated column `index` (of `columns`) of the current record, as SQLite
    /// writes it in text (a REAL as `sqlite3` shows it); nil for NULL.
    package func column(_ index: Int) -> String? {
        let raw = statement.sqliteStatement
        let position = Int32(3 + index)
        guard sqlite3_column_type(raw, position) != SQLITE_NULL else { return nil }
        return String(decoding: Raw.text(raw, position), as: UTF8.self)
    }

    /// The next record, or nil after the last.
    package mutating func next() throws -> StoredRecord? {
        let raw = statement.sqliteStatement
        let code = sqlite3_step(raw)
        if code == SQLITE_DONE { return nil }
        guard code == SQLITE_ROW else {
            throw RecordReader.Failure(description: "cannot read '\(database)': \(String(cString: sqlite3_errstr(code)))")
        }
        return StoredRecord(account: Raw.text(raw, 0), id: Raw.text(raw, 1), record: Raw.text(raw, 2))
    }

    package mutating func rewind() {
        sqlite3_reset(statement.sqliteStatement)
    }

    /// Whether the database has downloads at all.
    package var hasFiles: Bool { files != nil }

    /// The path, relative to the database's folder, of the downloaded file of `url`.
    package func filePath(for url: String) throws -> String? {
        guard let files else { return nil }
        return try String.fetchOne(files, arguments: [url])
    }

}
