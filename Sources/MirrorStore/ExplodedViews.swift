/// A job's `explode:` as SQL: each list a view of the record table over `json_each`, one row
/// per element, so that the rows never disagree with their record, cost the walk nothing
/// and need no change of their own in the feed; and each run's bringing of the table's
/// views to the job's.
import GRDB
package import MirrorModel

package enum ExplodedViews {
    /// `CREATE VIEW "<table>__<name>" AS SELECT …`: one row per element of the array at the
    /// list's path, none for a record whose value there is missing or no array: `json_each`
    /// gives an array's elements integer keys, an object's members text keys and a scalar a
    /// NULL key. (Asking `json_type` of the path instead parses every record twice: a scan of
    /// the benchmark's 95,005 records took 1.6 times as long.) `idx` is the element's
    /// position, `element` its value as a column without a type gives it (an object or array
    /// as JSON text, an integer past 64 bits as its digits), then the element's columns, their
    /// paths read from the element. As `_mirror_views.definition` keeps it.
    package static func definition(table: String, list: ExplodedList) -> String {
        guard case let .success(path) = RecordColumn.sqlitePath(list.path) else {
            preconditionFailure("a list's path is checked where the job file is read")
        }
        let listPath = StoreSchema.literal(path)
        // The element itself: its type and value as json_each gives them, its text from the
        // record (`e.fullkey` is its path there), parsed once per statement.
        let element = GeneratedColumns.Source(value: "e.value", type: "e.type", both: "json_extract(r.record, e.fullkey, e.fullkey)")
        var columns = [
            "r.account AS account", "r.id AS parent_id", "e.key AS idx",
            GeneratedColumns.expression(nil, of: element) + " AS element",
        ]
        for column in list.columns {
            guard case let .success(inner) = RecordColumn.sqlitePath(column.path) else {
                preconditionFailure("an element column's path is checked where the job file is read")
            }
            let source = inner == "$" ? element
                : .at("e.fullkey || \(StoreSchema.literal(String(inner.dropFirst())))", in: "r.record")
            columns.append(GeneratedColumns.expression(column.type, of: source) + " AS \"\(column.name)\"")
        }
        return "CREATE VIEW \"\(ExplodedList.viewName(table: table, list: list.name))\" AS SELECT "
            + columns.joined(separator: ", ")
            + " FROM \"\(table)\" AS r, json_each(r.record, \(listPath)) AS e WHERE typeof(e.key) = 'integer'"
    }

    /// A view the job wants has the name of a table, view, index or trigger that mirror did not make.
    package struct Taken: Error, CustomStringConvertible {
        package let table: String
        package let list: String
        package let view: String
        package let type: String
        package var description: String {
            "the view '\(view)' of list '\(list)' of table '\(table)' has the name of a \(type) that mirror did not make: "
                + "name the job's list otherwise"
        }
    }

    /// Makes the views of `table` those of `lists`, in the transaction of `db`: a view mirror
    /// made that the job no longer has, or has with another path or columns, is dropped; a
    /// missing one is created. No row is written, so the change feed gets nothing. With the
    /// views already as wanted, nothing is written.
    static func update(_ db: Database, table: String, to lists: [ExplodedList]) throws {
        let made = try Row.fetchAll(db, sql: "SELECT name, definition FROM \(StoreSchema.views) WHERE table_name = ?",
                                    arguments: [table]).map { (name: $0["name"] as String, definition: $0["definition"] as String) }
        guard !made.isEmpty || !lists.isEmpty else { return }
        // SQLite compares names without case; tables, views, indexes and triggers share them.
        var present = Dictionary(try Row.fetchAll(db, sql: "SELECT name, type FROM sqlite_master")
            .map { (($0["name"] as String).lowercased(), $0["type"] as String) }, uniquingKeysWith: { first, _ in first })
        let wanted = Dictionary(lists.map { (ExplodedList.viewName(table: table, list: $0.name).lowercased(),
                                             definition(table: table, list: $0)) },
                                uniquingKeysWith: { first, _ in first })
        var kept: Set<String> = []
        for view in made {
            let key = view.name.lowercased()
            if wanted[key] == view.definition, present[key] == "view" {
                kept.insert(key)
                continue
            }
            if present[key] == "view" {
                try db.execute(sql: "DROP VIEW \"\(view.name)\"")
                present[key] = nil
            }
            try db.execute(sql: "DELETE FROM \(StoreSchema.views) WHERE table_name = ? AND name = ?", arguments: [table, view.name])
        }
        for list in lists {
            let name = ExplodedList.viewName(table: table, list: list.name)
            let key = name.lowercased()
            if kept.contains(key) { continue }
            if let type = present[key] { throw Taken(table: table, list: list.name, view: name, type: type) }
            let sql = definition(table: table, list: list)
            try db.execute(sql: sql)
            try db.execute(sql: "INSERT INTO \(StoreSchema.views) (table_name, name, definition) VALUES (?, ?, ?)",
                           arguments: [table, name, sql])
            present[key] = "view"
        }
    }
}
