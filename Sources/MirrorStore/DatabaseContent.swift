import Crypto
import GRDB
import GRDBSQLite
import MirrorModel

/// The SHA-256 of what a database holds, leaving out when things were last seen: the
/// schema and every row, but not the records' `last_seen`, the pages' and files'
/// `fetched_at`, the walks' `started_at`, `updated_at` and `last_complete_start`, nor
/// the history of runs (`_mirror_runs`). A rerun that found every page, record, file and
/// checkpoint as it was changes only those, so its database has the digest it had, and a
/// remote state store is not sent a copy that differs from the last in nothing but times.
///
/// Rows are hashed one by one and their hashes added, so the digest does not depend on the
/// order of rows on disk: a live file and its `VACUUM INTO` copy have the same digest.
/// Generated columns are left out too: they follow from the rest and the schema.
package enum DatabaseContent {
    /// Columns that say when something was seen, not what: by table; `last_seen` in every
    /// record table.
    static let observationTimes: [String: Set<String>] = [
        StoreSchema.pages: ["fetched_at"],
        StoreSchema.files: ["fetched_at"],
        StoreSchema.walks: ["started_at", "updated_at", "last_complete_start"],
    ]

    /// The digest of the database at `path`, in lowercase hex, read in one read transaction
    /// of a read-only connection: a run may be writing it.
    package static func digest(of path: String) throws -> String {
        var configuration = RecordReader.readOnly
        configuration.busyMode = .timeout(TableStore.busyTimeout)
        return try DatabaseQueue(path: path, configuration: configuration).read { db in
            var whole = SHA256()
            let schema = try Row.fetchAll(db, sql: """
                SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name
                """)
            for row in schema {
                for column in ["type", "name", "tbl_name", "sql"] {
                    add((row[column] as String?) ?? "", to: &whole)
                }
            }
            let tables = schema.filter { $0["type"] == "table" }.map { $0["name"] as String }
            for table in tables where table != StoreSchema.runs {
                add(table, to: &whole)
                let digest = try rows(of: table, db: db)
                whole.update(data: digest)
            }
            return Hex.string(whole.finalize())
        }
    }

    /// The digest of one table's rows: their count, and the sum of their hashes.
    private static func rows(of table: String, db: Database) throws -> [UInt8] {
        let recordTable = !table.hasPrefix("_mirror_") && !table.hasPrefix("sqlite_")
        let left = observationTimes[table] ?? (recordTable ? ["last_seen"] : [])
        // `table_info` lists stored columns, never generated ones.
        let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?) ORDER BY cid", arguments: [table])
            .filter { !left.contains($0) }
        guard !columns.isEmpty else { return [] }
        var sql = "SELECT \(columns.map(\.quotedDatabaseIdentifier).joined(separator: ", ")) FROM \(table.quotedDatabaseIdentifier)"
        if table == "sqlite_sequence" { sql += " WHERE name <> '\(StoreSchema.runs)'" }
        let statement = try db.makeStatement(sql: sql)
        let raw = statement.sqliteStatement
        var sum: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var count: UInt64 = 0
        let width = Int32(columns.count)
        while true {
            let code = sqlite3_step(raw)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
            var hash = SHA256()
            for index in 0..<width {
                add(column: index, of: raw, to: &hash)
            }
            hash.finalize().withUnsafeBytes { bytes in
                sum.0 &+= bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
                sum.1 &+= bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                sum.2 &+= bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
                sum.3 &+= bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
            }
            count += 1
        }
        var table = SHA256()
        for value in [count, sum.0, sum.1, sum.2, sum.3] {
            withUnsafeBytes(of: value.littleEndian) { table.update(bufferPointer: $0) }
        }
        columns.forEach { add($0, to: &table) }
        return Array(table.finalize())
    }

    /// A value, with its type and length before it, so no two rows hash alike by chance of
    /// where one value ends and the next begins.
    private static func add(column index: Int32, of statement: OpaquePointer, to hash: inout SHA256) {
        let type = sqlite3_column_type(statement, index)
        withUnsafeBytes(of: UInt8(truncatingIfNeeded: type)) { hash.update(bufferPointer: $0) }
        switch type {
        case SQLITE_INTEGER:
            withUnsafeBytes(of: sqlite3_column_int64(statement, index).littleEndian) { hash.update(bufferPointer: $0) }
        case SQLITE_FLOAT:
            withUnsafeBytes(of: sqlite3_column_double(statement, index).bitPattern.littleEndian) { hash.update(bufferPointer: $0) }
        case SQLITE_TEXT, SQLITE_BLOB:
            let start = type == SQLITE_TEXT ? sqlite3_column_text(statement, index).map(UnsafeRawPointer.init)
                : sqlite3_column_blob(statement, index)
            let length = Int(sqlite3_column_bytes(statement, index))
            withUnsafeBytes(of: UInt64(length).littleEndian) { hash.update(bufferPointer: $0) }
            if let start, length > 0 { hash.update(bufferPointer: UnsafeRawBufferPointer(start: start, count: length)) }
        default:
            break
        }
    }

    private static func add(_ text: String, to hash: inout SHA256) {
        var text = text
        text.withUTF8 { bytes in
            withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { hash.update(bufferPointer: $0) }
            hash.update(bufferPointer: UnsafeRawBufferPointer(bytes))
        }
    }
}
