package import GRDB

/// The rows of `sql` on `database`, each value as `typeof:value` (`null` for NULL), so a test
/// can tell an integer from the same digits as text.
package func typedRows(_ database: DatabaseQueue, _ sql: String, _ arguments: StatementArguments = []) throws -> [[String]] {
    try database.read { db in
        try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
            Array(row.databaseValues).map { value -> String in
                switch value.storage {
                case .null: "null"
                case let .int64(number): "integer:\(number)"
                case let .double(number): "real:\(number)"
                case let .string(text): "text:\(text)"
                case .blob: "blob"
                }
            }
        }
    }
}
