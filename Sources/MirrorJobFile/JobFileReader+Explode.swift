import MirrorJSON
import MirrorModel
import Yams

/// `explode`: lists inside each record, read as rows of views `<table>__<name>`; each
/// `name: path` or `name: {path: P, columns: {…}}`, its columns written as the job's
/// `columns`, their paths read from each element.
extension JobFileReader {
    mutating func readExplode(_ job: JobNodes, table: String?) -> [ExplodedList] {
        guard let node = job.keys[.explode]?.value else { return [] }
        guard case let .mapping(map) = node else {
            error(node, "'explode' must be a mapping of list name to record path, such as { tags: tags }")
            return []
        }
        var lists: [ExplodedList] = []
        var names: [String: Node] = [:]
        for (keyNode, value) in map {
            let name = scalarText(keyNode) ?? ""
            let key = "explode.\(name)"
            if !RecordColumn.isIdentifier(name) {
                error(keyNode, "list name '\(name)' must match [A-Za-z_][A-Za-z0-9_]*")
                continue
            }
            if let first = names[name.lowercased()] {
                let at = first.mark.map { "\($0.line):\($0.column)" } ?? "?"
                error(keyNode, "list '\(name)' is list '\(scalarText(first) ?? "")' again (first set at \(at)): "
                    + "its view would have the other's name, and SQLite compares names without case")
                continue
            }
            names[name.lowercased()] = keyNode
            if let table {
                let view = ExplodedList.viewName(table: table, list: name)
                if let prefix = ["_mirror_", "sqlite_"].first(where: { view.lowercased().hasPrefix($0) }) {
                    error(keyNode, "list '\(name)' would make the view '\(view)', and names starting with '\(prefix)' are "
                        + "kept for \(prefix == "sqlite_" ? "SQLite" : "mirror")'s own: name the table otherwise")
                    continue
                }
            }

            var pathNode: Node? = value
            var columns: [RecordColumn] = []
            if case .mapping = value {
                let long = mapping(value, keys: ExplodeKey.self, context: "list '\(name)'")
                pathNode = long[.path]?.value
                if pathNode == nil { error(value, "list '\(name)' needs 'path', the record path of the list") }
                if let n = long[.columns]?.value {
                    let rules = ColumnRules(key: "\(key).columns", source: "element", example: "{ sku: product.sku }",
                                            reserved: ExplodedList.viewColumns, reservedBy: "the view of every list has the columns",
                                            owner: " of list '\(name)'", view: name)
                    columns = readColumns(n, rules: rules)
                }
            }
            guard let pathNode, let path = path(pathNode, key: key) else { continue }
            if path.segments.isEmpty {
                error(pathNode, "'\(key)' cannot be '.': the record itself is an object, never a list")
                continue
            }
            switch RecordColumn.sqlitePath(path) {
            case .success:
                lists.append(ExplodedList(name: name, path: path, columns: columns))
            case .failure(.manyValues):
                error(pathNode, "'\(key)' must lead to one list: a list's path takes no '*' and no filter, not '\(path)'")
            case let .failure(.unquotable(part)):
                error(pathNode, "'\(key)' cannot be a list's path: SQLite's JSON paths cannot name the key '\(part)', "
                    + "which holds '\"' or '\\'")
            }
        }
        return lists
    }
}
