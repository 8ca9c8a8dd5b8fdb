/// A job's `columns:` as SQL: each a generated column of the record table, computed by
/// SQLite from the record (so it never disagrees with it and never fails a page), and
/// each run's bringing of the table's columns to the job's.
import GRDB
import MirrorModel

package enum GeneratedColumns {
    /// The index of a column with `index: true`: `"<table>.<column>"`. Neither a table nor
    /// a column name holds a dot, so it is no table's name, no index of another table, and
    /// not `<table>_walk_order` or `<table>_by_parent`.
    package static func indexName(table: String, column: String) -> String {
        table + "." + column
    }

    /// `"<name>" <type> GENERATED ALWAYS AS (<expression>) VIRTUAL`, as `ALTER TABLE ADD
    /// COLUMN` takes it and as `_mirror_columns.definition` keeps it.
    package static func definition(_ column: RecordColumn) -> String {
        let declared = declaredType(column.type).map { " " + $0 } ?? ""
        return "\"\(column.name)\"\(declared) GENERATED ALWAYS AS (\(expression(column))) VIRTUAL"
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
    /// - integer: a JSON number written without `.`, `e` or `E`; past 64 bits, its digits as
    ///   text (SQLite would read it as a rounded REAL);
    /// - real: any JSON number, as a REAL;
    /// - text: a JSON string (a number is not text: it stays NULL);
    /// - boolean: 1 for true, 0 for false;
    /// - time: a JSON string that starts `YYYY-MM-DDTHH:MM` and that SQLite's `julianday()`
    ///   reads (seconds and a fraction, `Z` or `±HH:MM` may follow; nothing else): the
    ///   strings `RecordColumn.isTime` accepts, which a test holds to this expression;
    /// - no type: the value as `json_extract` gives it (an object or array as JSON text),
    ///   but an integer past 64 bits as its digits, as for integer.
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
        let digits = "substr(\(both), 2, instr(\(both), ',') - 2)"
        switch type {
        case nil:
            return "CASE WHEN \(kind) IN ('integer', 'real') AND typeof(\(value)) = 'real' AND \(digits) NOT GLOB '*[.eE]*' "
                + "THEN \(digits) ELSE \(value) END"
        case .integer:
            return "CASE WHEN \(kind) IN ('integer', 'real') THEN CASE WHEN typeof(\(value)) = 'integer' THEN \(value) "
                + "WHEN \(digits) NOT GLOB '*[.eE]*' THEN \(digits) END END"
        case .real:
            return "CASE WHEN \(kind) IN ('integer', 'real') THEN CAST(\(value) AS REAL) END"
        case .text:
            return "CASE WHEN \(kind) = 'text' THEN \(value) END"
        case .boolean:
            return "CASE \(kind) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END"
        case .time:
            return "CASE WHEN \(kind) = 'text' AND \(value) GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]*' "
                + "THEN CASE WHEN julianday(\(value)) IS NOT NULL THEN \(value) END END"
        }
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
    /// `db`: a column mirror made that the job no longer has, or has with another path or
    /// type, is dropped (its index first); a missing one is added; indexes follow `index`.
    /// Altering the table's columns writes no row, so the change feed gets nothing. With
    /// the columns already as wanted, nothing is written. Without `indexes`, the columns'
    /// indexes are left out (dropped if there), for `createIndexes` to make later.
    static func update(_ db: Database, table: String, to columns: [RecordColumn], indexes: Bool) throws {
        let made = try Row.fetchAll(db, sql: "SELECT name, definition FROM \(StoreSchema.columns) WHERE table_name = ?",
                                    arguments: [table]).map { (name: $0["name"] as String, definition: $0["definition"] as String) }
        guard !made.isEmpty || !columns.isEmpty else { return }
        // SQLite compares column names without case.
        var present = Set(try Row.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?)", arguments: [table])
            .map { ($0["name"] as String).lowercased() })
        let wanted = Dictionary(columns.map { ($0.name.lowercased(), definition($0)) }, uniquingKeysWith: { first, _ in first })
        var kept: Set<String> = []
        for column in made {
            let key = column.name.lowercased()
            if wanted[key] == column.definition, present.contains(key) {
                kept.insert(key)
                continue
            }
            try db.execute(sql: "DROP INDEX IF EXISTS \"\(indexName(table: table, column: column.name))\"")
            if present.contains(key) {
                try db.execute(sql: "ALTER TABLE \"\(table)\" DROP COLUMN \"\(column.name)\"")
                present.remove(key)
            }
            try db.execute(sql: "DELETE FROM \(StoreSchema.columns) WHERE table_name = ? AND name = ?",
                           arguments: [table, column.name])
        }
        for column in columns {
            let key = column.name.lowercased()
            if !kept.contains(key) {
                guard !present.contains(key) else { throw Taken(table: table, column: column.name) }
                try db.execute(sql: "ALTER TABLE \"\(table)\" ADD COLUMN \(definition(column))")
                try db.execute(sql: "INSERT INTO \(StoreSchema.columns) (table_name, name, definition) VALUES (?, ?, ?)",
                               arguments: [table, column.name, definition(column)])
            }
            if column.index, indexes {
                try createIndex(db, table: table, column: column)
            } else {
                try db.execute(sql: "DROP INDEX IF EXISTS \"\(indexName(table: table, column: column.name))\"")
            }
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
