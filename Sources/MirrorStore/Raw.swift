import GRDB
import GRDBSQLite
import MirrorModel

/// Thin helpers over the C API for the per-record hot path.
enum Raw {
    package static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    /// SQLite reads the bytes where they are, without copying them: they must stay valid
    /// until the parameter is bound again or cleared.
    static let unmoving: sqlite3_destructor_type? = nil

    /// Binds the whole text, by its byte length: a NUL inside it is kept, not an end.
    package static func bind(_ statement: OpaquePointer, _ index: Int32, _ text: String) {
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

    /// Binds UTF-8 text given as bytes, which SQLite reads in place: they must stay valid
    /// until the parameter is bound again or the bindings are cleared. A page's records
    /// and ids are bound so, without a copy each.
    package static func bind(_ statement: OpaquePointer, _ index: Int32, unmoving text: UnsafeBufferPointer<UInt8>) {
        guard let start = text.baseAddress else {
            _ = sqlite3_bind_text(statement, index, "", 0, transient)
            return
        }
        _ = sqlite3_bind_text(statement, index, UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self),
                              Int32(text.count), unmoving)
    }

    /// A text column of the current row, where SQLite holds it: valid until the statement moves.
    package static func text(_ statement: OpaquePointer, _ index: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let text = sqlite3_column_text(statement, index) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, index)))
    }

    package static func step(_ statement: OpaquePointer, db: OpaquePointer?) throws {
        let code = sqlite3_step(statement)
        guard code == SQLITE_DONE || code == SQLITE_ROW else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code),
                                message: db.map { String(cString: sqlite3_errmsg($0)) })
        }
    }
}
