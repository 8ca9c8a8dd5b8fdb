public import Foundation
import GRDB
import MirrorStore

/// Which records of a table `Replica.records(_:)` reads, and in what order: by default all of
/// them, in the order the last walk saw them (by account, then page by page; a child job's
/// table each parent's children together). Filters and sorting name the table's generated
/// columns (a job's `columns:`), so that a query on an indexed one is answered from its index.
///
/// ```swift
/// let soon = RecordQuery(table: "t_event")
///     .filter("starts_at", .greaterOrEqual, "2026-12-01")
///     .sorted(by: "starts_at")
///     .limit(20)
/// let events = try replica.records(soon, as: Event.self)
/// ```
public struct RecordQuery: Sendable, Equatable {
    /// How a filter compares a column with its value (SQLite's comparison: a NULL matches none).
    public enum Comparison: String, Sendable, CaseIterable {
        case equal = "="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
    }

    struct Filter: Sendable, Equatable {
        let column: String
        let comparison: Comparison
        let value: RecordValue
    }

    public let table: String
    private(set) var account: String?
    private(set) var filters: [Filter] = []
    private(set) var order: (column: String, descending: Bool)?
    private(set) var limit: Int?
    private(set) var offset = 0

    /// Every record of `table`, in walk order.
    public init(table: String) {
        self.table = table
    }

    /// Only the records of `account` (a job's `accounts:`).
    public func account(_ account: String) -> RecordQuery {
        var query = self
        query.account = account
        return query
    }

    /// Only the records whose generated column `column` compares with `value` as asked.
    public func filter(_ column: String, _ comparison: Comparison = .equal, _ value: RecordValue) -> RecordQuery {
        var query = self
        query.filters.append(Filter(column: column, comparison: comparison, value: value))
        return query
    }

    /// Sorted by the generated column `column` (records with the same value in walk order).
    public func sorted(by column: String, descending: Bool = false) -> RecordQuery {
        var query = self
        query.order = (column, descending)
        return query
    }

    /// At most `count` records, after the first `offset`.
    public func limit(_ count: Int, offset: Int = 0) -> RecordQuery {
        var query = self
        query.limit = max(0, count)
        query.offset = max(0, offset)
        return query
    }

    public static func == (a: RecordQuery, b: RecordQuery) -> Bool {
        a.table == b.table && a.account == b.account && a.filters == b.filters && a.order?.column == b.order?.column
            && a.order?.descending == b.order?.descending && a.limit == b.limit && a.offset == b.offset
    }

    /// The statement and its arguments, for a table whose generated columns are `columns`
    /// (and which has `parent_id` when it is a child job's).
    func statement(columns: [String], child: Bool) throws(ReplicaError) -> (sql: String, arguments: StatementArguments) {
        func checked(_ column: String) throws(ReplicaError) -> String {
            guard columns.contains(column) else {
                let known = columns.isEmpty ? "it has none (a job's `columns:` makes them)" : "its columns: " + columns.joined(separator: ", ")
                throw .query("no generated column '\(column)' in '\(table)': \(known)")
            }
            return column.quotedDatabaseIdentifier
        }
        var conditions: [String] = []
        var arguments: StatementArguments = []
        if let account {
            conditions.append("account = ?")
            _ = arguments.append(contentsOf: [account])
        }
        for filter in filters {
            conditions.append("\(try checked(filter.column)) \(filter.comparison.rawValue) ?")
            _ = arguments.append(contentsOf: [filter.value.databaseValue])
        }
        var sql = "SELECT record FROM \(table.quotedDatabaseIdentifier)"
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        let walk = child ? "account, parent_id, position" : "account, position"
        if let order {
            sql += " ORDER BY \(try checked(order.column))\(order.descending ? " DESC" : ""), \(walk)"
        } else {
            sql += " ORDER BY \(walk)"
        }
        if limit != nil || offset > 0 {
            sql += " LIMIT ? OFFSET ?"
            _ = arguments.append(contentsOf: [limit ?? -1, offset])
        }
        return (sql, arguments)
    }
}

/// A value a filter compares a generated column with.
public enum RecordValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
                         ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral {
    case text(String)
    case integer(Int64)
    case real(Double)

    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    /// A `boolean` column holds 1 and 0.
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }

    var databaseValue: DatabaseValue {
        switch self {
        case let .text(text): text.databaseValue
        case let .integer(number): number.databaseValue
        case let .real(number): number.databaseValue
        }
    }
}

/// A generated column of a table in the replica.
public struct RecordColumnInfo: Sendable, Equatable {
    public let name: String
    /// The declared type: `TEXT` for a `text` or `time` column, `INTEGER` for a `boolean` one,
    /// nil for an `integer`, `real` or untyped one (whose values keep their own SQLite type).
    public let type: String?
    /// Whether the column has an index (the job's `index: true`).
    public let indexed: Bool
}

extension Replica {
    /// The JSON of each record `query` selects, as the table holds it (the API's record, ids
    /// and numbers digit for digit), read from the generation the replica holds in one read
    /// transaction; none before the first sync.
    public func records(_ query: RecordQuery) throws -> [Data] {
        try reading(query) { statement in try Data.fetchAll(statement) } ?? []
    }

    /// The records `query` selects, each decoded as `T` (with `decoder`, a plain
    /// `JSONDecoder` unless given). A record that does not decode fails the read, naming its
    /// place in the results.
    public func records<T: Decodable>(_ query: RecordQuery, as type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> [T] {
        try records(query).enumerated().map { index, json in
            do {
                return try decoder.decode(T.self, from: json)
            } catch {
                throw ReplicaError.query("record \(index + 1) of '\(query.table)' does not decode as \(T.self): \(error)")
            }
        }
    }

    /// The generated columns of `table` (a job's `columns:`), in the table's order; nil
    /// before the first sync.
    public func columns(of table: String) throws -> [RecordColumnInfo]? {
        try withGeneration { _, folder in
            let reader = RecordReader(database: try Self.database(of: table, in: folder))
            do {
                return try reader.columns(of: table).map { RecordColumnInfo(name: $0.name, type: $0.declaredType, indexed: $0.indexed) }
            } catch {
                throw ReplicaError.query("\(error)")
            }
        } ?? nil
    }

    /// Runs `body` with the prepared statement of `query`, in a read transaction on the
    /// database of the generation that holds its table; nil before the first sync.
    private func reading<T>(_ query: RecordQuery, _ body: (Statement) throws -> T) throws -> T? {
        try withGeneration { _, folder in
            let path = try Self.database(of: query.table, in: folder)
            var configuration = Configuration()
            configuration.readonly = true
            let queue: DatabaseQueue
            do {
                queue = try DatabaseQueue(path: path, configuration: configuration)
            } catch {
                throw ReplicaError.folder("cannot open \(path): \(error)")
            }
            return try queue.read { db in
                let child = try db.columns(in: query.table).contains { $0.name == "parent_id" }
                let columns = try RecordReader(database: path).columns(of: query.table).map(\.name)
                let (sql, arguments) = try query.statement(columns: columns, child: child)
                let statement = try db.makeStatement(sql: sql)
                try statement.setArguments(arguments)
                return try body(statement)
            }
        } ?? nil
    }

    /// The database of the generation in `folder` that holds `table`.
    private static func database(of table: String, in folder: String) throws(ReplicaError) -> String {
        do {
            return try RecordReader.locate(table: table, in: folder)
        } catch {
            throw .query(error.description)
        }
    }
}
