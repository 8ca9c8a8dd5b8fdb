import MirrorJSON
import MirrorModel
import Yams

/// `columns`: generated columns of the job's record table, each `name: path` or
/// `name: {path: P, type: T, index: true, stored: true}`; and the same form for the columns
/// of an `explode` list's elements (neither indexed nor stored: they are a view's).
extension JobFileReader {
    /// Where a mapping of columns stands, and what its columns may be.
    struct ColumnRules {
        /// The key, as messages name it: `columns`, `explode.lines.columns`.
        let key: String
        /// `record` or `element`: what the columns' paths are read from.
        let source: String
        /// An entry such as `{ city: venue.city }`.
        let example: String
        /// Names the columns may not take, whatever the case, and what has them.
        let reserved: [String]
        let reservedBy: String
        /// ` of list 'lines'`, after `column 'sku'`; empty for the job's own columns.
        let owner: String
        /// The list whose view the columns are in: a view cannot be indexed.
        let view: String?

        static let table = ColumnRules(key: "columns", source: "record", example: "{ city: venue.city }",
                                       reserved: RecordColumn.tableColumns, reservedBy: "every record table has the columns",
                                       owner: "", view: nil)
    }

    mutating func readColumns(_ job: JobNodes) -> [RecordColumn] {
        guard let node = job.keys[.columns]?.value else { return [] }
        return readColumns(node, rules: .table)
    }

    /// The columns of `node`, a mapping of column name to path under `rules`: those that
    /// could be read, the others reported.
    mutating func readColumns(_ node: Node, rules: ColumnRules) -> [RecordColumn] {
        guard case let .mapping(map) = node else {
            error(node, "'\(rules.key)' must be a mapping of column name to \(rules.source) path, such as \(rules.example)")
            return []
        }
        var columns: [RecordColumn] = []
        var names: [String: Node] = [:]
        for (keyNode, value) in map {
            let name = scalarText(keyNode) ?? ""
            let key = "\(rules.key).\(name)"
            let label = "column '\(name)'\(rules.owner)"
            if !RecordColumn.isIdentifier(name) {
                error(keyNode, "column name '\(name)' must match [A-Za-z_][A-Za-z0-9_]*")
                continue
            }
            if rules.reserved.contains(name.lowercased()) {
                error(keyNode, "column name '\(name)' is taken: \(rules.reservedBy) "
                    + rules.reserved.joined(separator: ", ") + " (names compared without case)")
                continue
            }
            if let first = names[name.lowercased()] {
                let at = first.mark.map { "\($0.line):\($0.column)" } ?? "?"
                error(keyNode, "\(label) is column '\(scalarText(first) ?? "")' again (first set at \(at)): "
                    + "SQLite compares column names without case")
                continue
            }
            names[name.lowercased()] = keyNode

            var pathNode: Node? = value
            var type: RecordColumn.Kind?
            var index = false
            var usable = true
            var stored = false
            if case .mapping = value {
                let long = mapping(value, keys: ColumnKey.self, context: label)
                pathNode = long[.path]?.value
                if pathNode == nil {
                    let element = rules.view == nil ? "" : " ('.' for the element itself)"
                    error(value, "\(label) needs 'path', the \(rules.source) path it takes\(element)")
                }
                if let n = long[.type]?.value, let text = string(n, key: "\(key).type") {
                    type = RecordColumn.Kind(rawValue: text.value)
                    if type == nil {
                        usable = false
                        error(n, "'\(key).type' must be integer, real, text, boolean or time, not '\(text.shown)'")
                    }
                }
                if let n = long[.index]?.value {
                    index = bool(n, key: "\(key).index") ?? false
                    if index, let view = rules.view {
                        error(n, "'\(key).index' cannot be true: list '\(view)' is a view, computed from the records as "
                            + "it is read, and SQLite indexes no view; index a column of the table instead")
                        usable = false
                    }
                }
                if let n = long[.stored]?.value {
                    stored = bool(n, key: "\(key).stored") ?? false
                    if stored, let view = rules.view {
                        error(n, "'\(key).stored' cannot be true: list '\(view)' is a view, computed from the records as "
                            + "it is read, and SQLite stores no column of a view")
                        usable = false
                    }
                }
            }
            guard let pathNode, let path = path(pathNode, key: key) else { continue }
            switch RecordColumn.sqlitePath(path) {
            case .success:
                if usable { columns.append(RecordColumn(name: name, path: path, type: type, index: index, stored: stored)) }
            case .failure(.manyValues):
                error(pathNode, "'\(key)' must lead to one value: a column's path takes no '*' and no filter, not '\(path)'")
            case let .failure(.unquotable(part)):
                error(pathNode, "'\(key)' cannot be a column's path: SQLite's JSON paths cannot name the key '\(part)', "
                    + "which holds '\"' or '\\'")
            }
        }
        return columns
    }
}
