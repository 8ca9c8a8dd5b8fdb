import MirrorJSON
import MirrorModel
import Yams

/// `columns`: generated columns of the job's record table, each `name: path` or
/// `name: {path: P, type: T, index: true, stored: true}`.
extension JobFileReader {
    mutating func readColumns(_ job: JobNodes) -> [RecordColumn] {
        guard let node = job.keys[.columns]?.value else { return [] }
        guard case let .mapping(map) = node else {
            error(node, "'columns' must be a mapping of column name to record path, such as { city: venue.city }")
            return []
        }
        var columns: [RecordColumn] = []
        var names: [String: Node] = [:]
        for (keyNode, value) in map {
            let name = scalarText(keyNode) ?? ""
            let key = "columns.\(name)"
            if !RecordColumn.isIdentifier(name) {
                error(keyNode, "column name '\(name)' must match [A-Za-z_][A-Za-z0-9_]*")
                continue
            }
            if RecordColumn.tableColumns.contains(name.lowercased()) {
                error(keyNode, "column name '\(name)' is taken: every record table has the columns "
                    + RecordColumn.tableColumns.joined(separator: ", ") + " (names compared without case)")
                continue
            }
            if let first = names[name.lowercased()] {
                let at = first.mark.map { "\($0.line):\($0.column)" } ?? "?"
                error(keyNode, "column '\(name)' is column '\(scalarText(first) ?? "")' again (first set at \(at)): "
                    + "SQLite compares column names without case")
                continue
            }
            names[name.lowercased()] = keyNode

            var pathNode: Node? = value
            var type: RecordColumn.Kind?
            var index = false
            var stored = false
            var typeRead = true
            if case .mapping = value {
                let long = mapping(value, keys: ColumnKey.self, context: "column '\(name)'")
                pathNode = long[.path]?.value
                if pathNode == nil { error(value, "column '\(name)' needs 'path', the record path it takes") }
                if let n = long[.type]?.value, let text = string(n, key: "\(key).type") {
                    type = RecordColumn.Kind(rawValue: text.value)
                    if type == nil {
                        typeRead = false
                        error(n, "'\(key).type' must be integer, real, text, boolean or time, not '\(text.shown)'")
                    }
                }
                if let n = long[.index]?.value { index = bool(n, key: "\(key).index") ?? false }
                if let n = long[.stored]?.value { stored = bool(n, key: "\(key).stored") ?? false }
            }
            guard let pathNode, let path = path(pathNode, key: key) else { continue }
            switch RecordColumn.sqlitePath(path) {
            case .success:
                if typeRead { columns.append(RecordColumn(name: name, path: path, type: type, index: index, stored: stored)) }
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
