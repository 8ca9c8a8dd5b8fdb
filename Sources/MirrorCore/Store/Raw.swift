import GRDB
import GRDBSQLite

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
