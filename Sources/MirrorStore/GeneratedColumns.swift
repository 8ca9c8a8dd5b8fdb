/// A job's `columns:` as SQL: each a generated column of the record table, computed by
/// SQLite from the record (so it never disagrees with it and never fails a page), and
/// each run's bringing of the table's columns to the job's.
import Foundation
import GRDB
package import MirrorModel

package enum GeneratedColumns {
    /// The index of a column with `index: true`: `"<table>.<column>"`. Neither a table nor
    /// a column name holds a dot, so it is no table's name, no index of another table, and
    /// not `<table>_walk_order` or `<table>_by_parent`.
    package static func indexName(table: String, column: String) -> String {
        table + "." + column
    }

    /// `"<name>" <type> GENERATED ALWAYS AS (<expression>) VIRTUAL` (or `STORED`), as `ALTER
    /// TABLE ADD COLUMN` or `CREATE TABLE` takes it and as `_mirror_columns.definition` keeps it.
    package static func definition(_ column: RecordColumn) -> String {
        let declared = declaredType(column.type).map { " " + $0 } ?? ""
        return "\"\(column.name)\"\(declared) GENERATED ALWAYS AS (\(expression(column))) \(column.stored ? "STORED" : "VIRTUAL")"
    }

    /// The declared type, which tells a reader what the column holds; the expression gives
    /// each value its type. An integer column has none: INTEGER affinity would read the
    /// digits of an integer past 64 bits as a rounded REAL. Nor has a real one: SQLite
    /// (3.40) gives a REAL-declared virtual column's whole values as integers once a query
    /// sorts its rows.
    static func declaredType(_ type: RecordColumn.Kind?) -> String? {
        switch type {
        case nil, .integer, .real: nil
        case .text, .time: "TEXT"
        case .boolean: "INTEGER"
        }
    }

    /// The value of `column` in a row, from `record`. A value of another JSON type than the
    /// column's is NULL, and so is a path that leads nowhere:
    /// - integer: a JSON number written without `.`, `e` or `E` (which `json_type` calls
    ///   `integer`); past 64 bits, its digits as text (SQLite would read it as a rounded REAL);
    /// - real: any JSON number, as a REAL;
    /// - text: a JSON string (a number is not text: it stays NULL);
    /// - boolean: 1 for true, 0 for false;
    /// - time: a JSON string that starts `YYYY-MM-DDTHH:MM` and that SQLite's `julianday()`
    ///   reads (seconds and a fraction, `Z` or `±HH:MM` may follow; nothing else): the
    ///   strings `RecordColumn.isTime` accepts, which a test holds to this expression;
    /// - no type: the value as `json_extract` gives it (an object or array as JSON text),
    ///   but an integer past 64 bits as its digits, as for integer.
    ///
    /// SQLite computes every generated column of a row each time the row is written (an
    /// insert, an update of its position), not only when it is read, so each JSON call
    /// counts. SQLite 3.40 keeps a statement's last parsed records, so the first call of a
    /// row parses it and the others look it up again: each expression makes as few calls as
    /// it can. One `json_type` chooses the branch; the value is extracted only for the type
    /// the column takes, and the digits of a big integer (two more calls) only for an
    /// integer that `json_extract` gives as a REAL. A time needs no `json_type`: only a
    /// string's text can match its pattern (a number's, an object's or an array's cannot).
    static func expression(_ column: RecordColumn) -> String {
        guard case let .success(path) = RecordColumn.sqlitePath(column.path) else {
            preconditionFailure("a column's path is checked where the job file is read")
        }
        return expression(column.type, of: .at(StoreSchema.literal(path), in: "record"))
    }

    /// Where a column's value is read: SQL for the value as `json_extract` gives it, for its
    /// JSON type as `json_type` names it, and for `[V,V]`, the value written twice as the
    /// JSON text has it (a two-path `json_extract`), from which an integer past 64 bits
    /// keeps its digits.
    struct Source {
        let value: String
        let type: String
        let both: String

        /// The value at `path`, SQL giving a JSON path, inside the JSON text `json`.
        static func at(_ path: String, in json: String) -> Source {
            Source(value: "json_extract(\(json), \(path))", type: "json_type(\(json), \(path))",
                   both: "json_extract(\(json), \(path), \(path))")
        }
    }

    /// The value `source` reads, kept as a column of `type` keeps it (see `expression(_:)`).
    static func expression(_ type: RecordColumn.Kind?, of source: Source) -> String {
        let value = source.value
        let kind = source.type
        let both = source.both
        let integer = "CASE WHEN typeof(\(value)) = 'integer' THEN \(value) ELSE substr(\(both), 2, instr(\(both), ',') - 2) END"
        switch type {
        case nil:
            return "CASE \(kind) WHEN 'integer' THEN \(integer) ELSE \(value) END"
        case .integer:
            return "CASE \(kind) WHEN 'integer' THEN \(integer) END"
        case .real:
            return "CASE \(kind) WHEN 'real' THEN \(value) WHEN 'integer' THEN CAST(\(value) AS REAL) END"
        case .text:
            return "CASE \(kind) WHEN 'text' THEN \(value) END"
        case .boolean:
            return "CASE \(kind) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END"
        case .time:
            return "CASE WHEN \(value) GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]*' "
                + "AND julianday(\(value)) IS NOT NULL THEN \(value) END"
        }
    }

    /// One row: for each of `columns`, in order, how many rows of `table` with the account
    /// `?1` have the column NULL and a value at its path that is not JSON's `null`. The path
    /// is read only where the column is NULL.
    static func mismatches(table: String, columns: [RecordColumn]) -> String {
        let counts = columns.map { column in
            guard case let .success(path) = RecordColumn.sqlitePath(column.path) else {
                preconditionFailure("a column's path is checked where the job file is read")
            }
            return "sum(CASE WHEN \"\(column.name)\" IS NULL THEN json_type(record, \(StoreSchema.literal(path))) <> 'null' END)"
        }
        return "SELECT \(counts.joined(separator: ", ")) FROM \"\(table)\" WHERE account = ?1"
    }

    /// A column the job wants has the name of a column that mirror did not make.
    package struct Taken: Error, CustomStringConvertible {
        package let table: String
        package let column: String
        package var description: String {
            "table '\(table)' has a column '\(column)' that mirror did not make: name the job's column otherwise"
        }
    }

    /// Makes the generated columns of `table` those of `columns`, in the transaction of
    /// `db`: a column mirror made that the job no longer has, or has with another path, type
    /// or storage, is dropped (its index first); a missing one is added; indexes follow
    /// `index`, and the columns added (new, or changed) are returned. A virtual column is added and dropped by
    /// `ALTER TABLE`, which writes no row;
    /// SQLite cannot add a stored one so, and a stored one added or dropped rebuilds the
    /// table (`rebuild`). Neither writes to the change feed. With the columns already as
    /// wanted, nothing is written. Without `indexes`, the indexes of the columns with
    /// `index: true` are left for `createIndexes`.
    @discardableResult
    static func update(_ db: Database, table: String, to columns: [RecordColumn], indexes: Bool) throws -> [RecordColumn] {
        guard let (gone, added, present) = try plan(db, table: table, to: columns) else { return [] }
        let dropped = gone.filter { present.contains($0.name.lowercased()) }
        for column in gone {
            try db.execute(sql: "DROP INDEX IF EXISTS \"\(indexName(table: table, column: column.name))\"")
            try db.execute(sql: "DELETE FROM \(StoreSchema.columns) WHERE table_name = ? AND name = ?",
                           arguments: [table, column.name])
        }
        if dropped.contains(where: { $0.definition.hasSuffix(" STORED") }) || added.contains(where: \.stored) {
            try rebuild(db, table: table, dropping: dropped.map(\.name), adding: added.map(definition))
        } else {
            for column in dropped {
                try db.execute(sql: "ALTER TABLE \"\(table)\" DROP COLUMN \"\(column.name)\"")
            }
            for column in added {
                try db.execute(sql: "ALTER TABLE \"\(table)\" ADD COLUMN \(definition(column))")
            }
        }
        for column in added {
            try db.execute(sql: "INSERT INTO \(StoreSchema.columns) (table_name, name, definition) VALUES (?, ?, ?)",
                           arguments: [table, column.name, definition(column)])
        }
        for column in columns {
            if column.index {
                if indexes { try createIndex(db, table: table, column: column) }
            } else {
                try db.execute(sql: "DROP INDEX IF EXISTS \"\(indexName(table: table, column: column.name))\"")
            }
        }
        return added
    }

    /// What making the generated columns of `table` those of `columns` takes: the columns
    /// mirror made to drop (changed or no longer wanted), the columns to add, and the names
    /// of the table's columns now (lowercased); nil when there are no columns either way.
    /// Throws `Taken` for a wanted column named like one that mirror did not make.
    static func plan(_ db: Database, table: String, to columns: [RecordColumn]) throws
        -> (gone: [(name: String, definition: String)], added: [RecordColumn], present: Set<String>)? {
        let made = try Row.fetchAll(db, sql: "SELECT name, definition FROM \(StoreSchema.columns) WHERE table_name = ?",
                                    arguments: [table]).map { (name: $0["name"] as String, definition: $0["definition"] as String) }
        guard !made.isEmpty || !columns.isEmpty else { return nil }
        // SQLite compares column names without case.
        let present = Set(try Row.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?)", arguments: [table])
            .map { ($0["name"] as String).lowercased() })
        let wanted = Dictionary(columns.map { ($0.name.lowercased(), definition($0)) }, uniquingKeysWith: { first, _ in first })
        var kept: Set<String> = []
        var gone: [(name: String, definition: String)] = []
        for column in made {
            let key = column.name.lowercased()
            if wanted[key] == column.definition, present.contains(key) {
                kept.insert(key)
            } else {
                gone.append(column)
            }
        }
        let freed = Set(gone.map { $0.name.lowercased() })
        let added = columns.filter { !kept.contains($0.name.lowercased()) }
        for column in added where present.contains(column.name.lowercased()) && !freed.contains(column.name.lowercased()) {
            throw Taken(table: table, column: column.name)
        }
        return (gone, added, present)
    }

    /// The table a rebuild fills before it takes the record table's name. `_mirror_` names
    /// no record table.
    static let rebuilt = "_mirror_rebuild"

    /// Makes `table` again, without the generated columns `dropping` and with those of the
    /// definitions `adding`, as SQLite's own recipe for a change `ALTER TABLE` cannot make
    /// goes: a new table of the wanted columns, every row copied into it with its rowid
    /// (and every column that is not generated: the record, `first_seen`, `last_seen`, the
    /// position, a user's own), the old table dropped, the new one renamed, and the old
    /// one's indexes and triggers (the change feed's and a user's) made again. The copy
    /// fires no trigger, so the change feed gets nothing. Views that name the table keep
    /// naming it: the rename is made as SQLite's legacy `ALTER TABLE` makes it, which
    /// leaves views and other tables' triggers as they are.
    static func rebuild(_ db: Database, table: String, dropping: [String], adding: [String]) throws {
        guard let created = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                                                arguments: [table]),
              let open = created.firstIndex(of: "(") else {
            throw DatabaseError(resultCode: .SQLITE_ERROR, message: "no table \(table) to rebuild")
        }
        // Indexes and triggers go with the table; the index of its primary key (no SQL) comes back with it.
        let attached = try String.fetchAll(db, sql: """
            SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL
            ORDER BY type, rowid
            """, arguments: [table])
        let names = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?) WHERE hidden = 0", arguments: [table])
        // Each row keeps its rowid, unless a column of a user's own takes that name.
        let rowid = names.contains { ["rowid", "oid", "_rowid_"].contains($0.lowercased()) } ? [] : ["rowid"]
        let copied = (rowid + names.map { "\"\($0)\"" }).joined(separator: ", ")
        // The new table's SQL is the old one's, less the dropped columns, with the added ones
        // where `ALTER TABLE ADD COLUMN` would put them (after the last column, before the
        // table's constraints): SQLite places a marker column there, whose text is then replaced.
        try db.execute(sql: "CREATE TABLE \"\(rebuilt)\" " + created[open...])
        for name in dropping {
            try db.execute(sql: "ALTER TABLE \"\(rebuilt)\" DROP COLUMN \"\(name)\"")
        }
        let marker = "\"\(rebuilt)\" GENERATED ALWAYS AS (NULL) VIRTUAL"
        try db.execute(sql: "ALTER TABLE \"\(rebuilt)\" ADD COLUMN \(marker)")
        let marked = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                                         arguments: [rebuilt]) ?? ""
        guard let at = marked.range(of: ", " + marker) else {
            throw DatabaseError(resultCode: .SQLITE_ERROR, message: "cannot place the columns of \(table) in its new definition")
        }
        try db.execute(sql: "DROP TABLE \"\(rebuilt)\"")
        try db.execute(sql: marked.replacingCharacters(in: at, with: adding.map { ", " + $0 }.joined()))
        try db.execute(sql: "INSERT INTO \"\(rebuilt)\" (\(copied)) SELECT \(copied) FROM \"\(table)\" ORDER BY rowid")
        try db.execute(sql: "DROP TABLE \"\(table)\"")
        let legacy = try Bool.fetchOne(db, sql: "PRAGMA legacy_alter_table") ?? false
        try db.execute(sql: "PRAGMA legacy_alter_table = ON")
        defer { try? db.execute(sql: "PRAGMA legacy_alter_table = \(legacy ? "ON" : "OFF")") }
        try db.execute(sql: "ALTER TABLE \"\(rebuilt)\" RENAME TO \"\(table)\"")
        for sql in attached {
            try db.execute(sql: sql)
        }
    }

    /// Creates the indexes of the columns with `index: true`, those missing.
    static func createIndexes(_ db: Database, table: String, columns: [RecordColumn]) throws {
        for column in columns where column.index {
            try createIndex(db, table: table, column: column)
        }
    }

    private static func createIndex(_ db: Database, table: String, column: RecordColumn) throws {
        let index = indexName(table: table, column: column.name)
        try db.execute(sql: "CREATE INDEX IF NOT EXISTS \"\(index)\" ON \"\(table)\" (\"\(column.name)\", account)")
    }
}
