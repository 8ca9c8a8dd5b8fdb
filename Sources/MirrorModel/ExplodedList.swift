/// A job's `explode:` entry: a list inside each record, read as rows of a view
/// `<table>__<name>` that SQLite computes from the record table (`json_each`), so that a
/// device queries the list's elements as rows without a table of their own to keep.
/// The store writes its SQL; the loader checks here that its paths can be SQLite's.
package import MirrorJSON

package struct ExplodedList: Sendable, Equatable {
    package let name: String
    /// The record path of the list.
    package let path: JSONPath
    /// Columns of each element, their paths read from the element (`.`: the element itself).
    /// None is indexed: a view has no index.
    package let columns: [RecordColumn]

    package init(name: String, path: JSONPath, columns: [RecordColumn] = []) {
        self.name = name
        self.path = path
        self.columns = columns
    }

    /// The view's own columns: an element column may not take their names, whatever the case.
    package static let viewColumns = ["account", "parent_id", "idx", "element"]

    /// Between the table's name and the list's in the view's: `t_event__tags`.
    package static let separator = "__"

    /// `<table>__<name>`.
    package static func viewName(table: String, list: String) -> String {
        table + separator + list
    }
}
