import Foundation
import GRDB
import GRDBSQLite

/// Streams stored records out of a table: NDJSON, a JSON array or CSV.
public struct Exporter: Sendable {
    public enum Format: String, Sendable, CaseIterable { case ndjson, json, csv }
    public enum Order: String, Sendable, CaseIterable { case walk, id }

    public struct Options: Sendable {
        public var table: String
        public var format: Format = .ndjson
        public var account: String?
        public var sinceID: String?
        public var maxID: String?
        public var limit: Int?
        public var offset: Int?
        public var order: Order = .walk
        /// Rewrite the URLs of downloaded files to their paths in the output folder.
        public var localFiles = false
        public init(table: String) { self.table = table }
    }

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    public let database: String
    public let options: Options

    public init(database: String, options: Options) {
        self.database = database
        self.options = options
    }

    /// The database file in `folder` that holds `table`.
    public static func locate(table: String, in folder: String) throws(Failure) -> String {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".sqlite") }.sorted()
        } catch {
            throw Failure(description: "cannot read the output folder '\(folder)': no such folder")
        }
        // The conventional file first.
        let conventional = "\(table).sqlite"
        for name in names.filter({ $0 == conventional }) + names.filter({ $0 != conventional }) {
            let path = (folder as NSString).appendingPathComponent(name)
            if (try? hasTable(table, at: path)) == true { return path }
        }
        throw Failure(description: "no table '\(table)' in any database of '\(folder)'")
    }

    static func hasTable(_ table: String, at path: String) throws -> Bool {
        let queue = try DatabaseQueue(path: path, configuration: readOnly)
        return try queue.read { db in try db.tableExists(table) }
    }

    private static var readOnly: Configuration {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        return configuration
    }

    /// Writes every selected record to `sink`.
    public func export(to sink: inout OutputSink) throws {
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: database, configuration: Self.readOnly)
        } catch {
            throw Failure(description: "cannot open '\(database)': \(error)")
        }
        try queue.read { db in
            guard try db.tableExists(options.table) else {
                throw Failure(description: "no table '\(options.table)' in '\(database)'")
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
            let (sql, arguments) = query()
            let statement = try db.makeStatement(sql: sql)
            try statement.setArguments(arguments)
            var localFiles = options.localFiles ? try LocalFiles(db: db) : nil
            switch options.format {
            case .ndjson:
                try each(statement, localFiles: &localFiles) { _, _, record in
                    sink.write(record)
                    sink.write(byte: 0x0A)
                }
            case .json:
                var first = true
                sink.write(byte: UInt8(ascii: "["))
                try each(statement, localFiles: &localFiles) { _, _, record in
                    sink.write(Array((first ? "\n" : ",\n").utf8))
                    sink.write(record)
                    first = false
                }
                sink.write(Array((first ? "]\n" : "\n]\n").utf8))
            case .csv:
                try writeCSV(statement, localFiles: &localFiles, to: &sink)
            }
            try sink.flush()
        }
    }

    func query() -> (String, StatementArguments) {
        var sql = "SELECT account, id, record FROM \"\(options.table)\""
        var conditions: [String] = []
        var arguments: StatementArguments = []
        if let account = options.account {
            conditions.append("account = ?")
            _ = arguments.append(contentsOf: [account])
        }
        if let since = options.sinceID {
            conditions.append("mirror_id_cmp(CAST(id AS BLOB), CAST(? AS BLOB)) > 0")
            _ = arguments.append(contentsOf: [since])
        }
        if let max = options.maxID {
            conditions.append("mirror_id_cmp(CAST(id AS BLOB), CAST(? AS BLOB)) <= 0")
            _ = arguments.append(contentsOf: [max])
        }
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        switch options.order {
        case .walk: sql += " ORDER BY account, position"
        case .id: sql += " ORDER BY id COLLATE mirror_id DESC, account"
        }
        if options.limit != nil || options.offset != nil {
            sql += " LIMIT ? OFFSET ?"
            _ = arguments.append(contentsOf: [options.limit ?? -1, options.offset ?? 0])
        }
        return (sql, arguments)
    }

    /// Steps the statement, handing each row's account, id and record bytes (valid only
    /// during the call, downloaded URLs rewritten when `localFiles` is set) to `body`.
    func each(_ statement: Statement, localFiles: inout LocalFiles?,
              _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        let raw = statement.sqliteStatement
        sqlite3_reset(raw)
        defer { sqlite3_reset(raw) }
        while true {
            let code = sqlite3_step(raw)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else {
                throw Failure(description: "cannot read '\(database)': \(String(cString: sqlite3_errstr(code)))")
            }
            let account = Self.column(raw, 0), id = Self.column(raw, 1), record = Self.column(raw, 2)
            if localFiles != nil {
                try localFiles!.rewrite(record) { try body(account, id, $0) }
            } else {
                try body(account, id, record)
            }
        }
    }

    static func column(_ statement: OpaquePointer, _ index: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let text = sqlite3_column_text(statement, index) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, index)))
    }

    // MARK: CSV

    /// A header row (mirror's account and id columns, then every top-level field in order
    /// of first appearance, every name unique), then one row per record; nested values as
    /// JSON text.
    func writeCSV(_ statement: Statement, localFiles: inout LocalFiles?, to sink: inout OutputSink) throws {
        var columns: [String] = []
        var known: Set<String> = []
        var noRewrite: LocalFiles?
        try each(statement, localFiles: &noRewrite) { _, _, record in
            guard let document = try? JSONDocument(parsing: UnsafeRawBufferPointer(record)) else { return }
            for member in document.root.members where known.insert(member.key).inserted {
                columns.append(member.key)
            }
        }
        // Every column name is unique, compared without case as SQLite compares them: the
        // record's own fields keep their names, and mirror's account and id columns take a
        // leading underscore for each field they would clash with (`id` → `_id` → `__id`).
        let taken = Set(columns.map { $0.lowercased() })
        func unique(_ name: String) -> String {
            var name = name
            while taken.contains(name.lowercased()) { name = "_" + name }
            return name
        }
        var line: [UInt8] = []
        Self.appendRow([unique("account"), unique("id")] + columns, to: &line)
        sink.write(line)
        try each(statement, localFiles: &localFiles) { account, id, record in
            line.removeAll(keepingCapacity: true)
            var cells = [String(decoding: account, as: UTF8.self), String(decoding: id, as: UTF8.self)]
            let document = try? JSONDocument(parsing: UnsafeRawBufferPointer(record))
            for column in columns {
                guard let value = document?.root[column] else { cells.append(""); continue }
                switch value.kind {
                case .null: cells.append("")
                case .string: cells.append(value.stringValue ?? "")
                default: cells.append(value.rawText)
                }
            }
            Self.appendRow(cells, to: &line)
            sink.write(line)
        }
    }

    private static func needsQuoting(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: ",") || byte == UInt8(ascii: "\"") || byte == 0x0A || byte == 0x0D
    }

    static func appendRow(_ cells: [String], to line: inout [UInt8]) {
        for (index, cell) in cells.enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            let needsQuotes = cell.utf8.contains(where: needsQuoting)
            if needsQuotes {
                line.append(0x22)
                for byte in cell.utf8 {
                    if byte == 0x22 { line.append(0x22) }
                    line.append(byte)
                }
                line.append(0x22)
            } else {
                line.append(contentsOf: cell.utf8)
            }
        }
        line.append(contentsOf: [0x0D, 0x0A])
    }
}
