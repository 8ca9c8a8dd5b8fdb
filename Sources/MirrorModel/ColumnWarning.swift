/// A typed generated column (`columns:` with `type`) that is NULL where its record holds a
/// value of another JSON type: counted over the records a walk stored or saw, once the walk
/// has ended.
package struct ColumnWarning: Sendable, Codable, Equatable {
    /// The column's name.
    package let column: String
    /// The column's type, which those values are not.
    package let type: RecordColumn.Kind
    /// The records whose value at the column's path is of another type (a JSON `null` is no value).
    package let records: Int

    package init(column: String, type: RecordColumn.Kind, records: Int) {
        self.column = column
        self.type = type
        self.records = records
    }

    /// `price: 3 not integer`.
    package var description: String { "\(column): \(records) not \(type.rawValue)" }
}
