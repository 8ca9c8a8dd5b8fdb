/// A job's `columns:` entry: a column of its record table that SQLite computes from each
/// record (a generated column), so that a device can select and index a field of the
/// record without `json_extract` in every query. The store writes its SQL; the loader
/// checks here that its path can be one.
package import MirrorJSON

package struct RecordColumn: Sendable, Equatable {
    /// What the column keeps of the value at its path; any other JSON type gives NULL.
    package enum Kind: String, Sendable, CaseIterable, Codable {
        case integer, real, text, boolean, time
    }

    package let name: String
    package let path: JSONPath
    /// Nil: the value whatever its type, an object or array as JSON text.
    package let type: Kind?
    /// An index on `(account, <name>)`.
    package let index: Bool
    /// Kept in each row (`STORED`), computed when a row is written, instead of computed
    /// when a row is read (`VIRTUAL`).
    package let stored: Bool

    package init(name: String, path: JSONPath, type: Kind? = nil, index: Bool = false, stored: Bool = false) {
        self.name = name
        self.path = path
        self.type = type
        self.index = index
        self.stored = stored
    }

    /// The columns every record table has: a generated column may not take their names,
    /// whatever the case.
    package static let tableColumns = ["account", "id", "record", "position", "first_seen", "last_seen", "parent_id"]

    /// `path` as a path of SQLite's JSON functions: a key that is a plain identifier as
    /// `.key`, any other as `."key"`, a segment of digits as an array index `[N]`, a negative
    /// one from the end `[#-N]`. Fails for `*`, a filter, and a key holding `"` or `\`
    /// (SQLite's paths cannot quote them).
    package static func sqlitePath(_ path: JSONPath) -> Result<String, PathProblem> {
        var text = "$"
        for segment in path.segments {
            switch segment {
            case .wildcard, .filter:
                return .failure(.manyValues)
            case let .key(key):
                if let index = arrayIndex(key) {
                    text += index < 0 ? "[#\(index)]" : "[\(index)]"
                } else if isIdentifier(key) {
                    text += "." + key
                } else if key.contains("\"") || key.contains("\\") {
                    return .failure(.unquotable(key))
                } else {
                    text += ".\"" + key + "\""
                }
            }
        }
        return .success(text)
    }

    /// Why a record path cannot be a column's.
    package enum PathProblem: Error, Equatable {
        /// `*` or `[key=value]`: a column holds one value.
        case manyValues
        /// A key SQLite's JSON paths cannot write.
        case unquotable(String)
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`: the names a column may have, and the keys a SQLite path
    /// writes without quotes.
    package static func isIdentifier(_ text: String) -> Bool {
        guard let first = text.utf8.first, !(first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")) else { return false }
        return text.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
        }
    }

    /// A key of digits, or a minus and digits (not `-0`), up to 18 of them: an array index,
    /// as record paths read one.
    package static func arrayIndex(_ key: String) -> Int? {
        let negative = key.hasPrefix("-")
        let digits = negative ? key.dropFirst() : key[...]
        guard !digits.isEmpty, digits.count <= 18, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let value = Int(digits) else { return nil }
        guard negative else { return value }
        return value == 0 ? nil : -value
    }
}
