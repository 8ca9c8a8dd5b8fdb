/// The records of a page whose value at a typed column's path is of another type, so that
/// the column is NULL where the record holds a value: found in Swift as the page is read,
/// and counted by the store for the records it writes (see `ColumnTypes`).
import MirrorJSON

package struct ColumnMismatches: Sendable {
    /// Each mismatch: the record's index in the page, the column's among the typed columns,
    /// by record.
    package private(set) var pairs: [(record: Int32, column: Int32)] = []

    package init() {}

    package var isEmpty: Bool { pairs.isEmpty }

    package mutating func append(record: Int, column: Int) {
        pairs.append((Int32(record), Int32(column)))
    }

    /// Adds to `counts` (by typed column, grown as needed) the mismatches of the records
    /// `isWritten` says were written.
    package func tally(into counts: inout [Int], isWritten: (Int) -> Bool) {
        for (record, column) in pairs where isWritten(Int(record)) {
            if counts.count <= Int(column) { counts += Array(repeating: 0, count: Int(column) + 1 - counts.count) }
            counts[Int(column)] += 1
        }
    }
}

/// A job's typed columns, checked against records' compacted text by the rules of their
/// SQL (`GeneratedColumns` in the store): a value is of the column's type when it is
/// - integer: a JSON number written without `.`, `e` or `E`;
/// - real: any JSON number;
/// - text: a JSON string;
/// - boolean: `true` or `false`;
/// - time: a JSON string that `RecordColumn.isTime` accepts.
/// A path that leads nowhere, or to `null`, is no value and no mismatch. A key of digits is
/// an array's index, from the end when negative, as the column's SQLite path reads it.
package struct ColumnTypes: Sendable {
    private struct Column: Sendable {
        enum Step: Sendable {
            case key([UInt8], String)
            case index(Int)
        }
        let steps: [Step]
        let type: RecordColumn.Kind
    }

    private let columns: [Column]
    /// The distinct first keys of the columns' paths, each column's index into them (nil for
    /// a path that starts with an index): a record's members are read once for all of them.
    private let firstKeys: [[UInt8]]
    private let firstKey: [Int?]

    /// Nil when none of `columns` has a type.
    package init?(_ columns: [RecordColumn]) {
        self.columns = columns.compactMap { column in
            guard let type = column.type else { return nil }
            let steps = column.path.segments.map { segment -> Column.Step in
                guard case let .key(key) = segment else {
                    preconditionFailure("a column's path is checked where the job file is read")
                }
                return RecordColumn.arrayIndex(key).map(Column.Step.index) ?? .key(Array(key.utf8), key)
            }
            return Column(steps: steps, type: type)
        }
        if self.columns.isEmpty { return nil }
        var keys: [[UInt8]] = []
        firstKey = self.columns.map { column in
            guard case let .key(key, _)? = column.steps.first else { return nil }
            if let known = keys.firstIndex(of: key) { return known }
            keys.append(key)
            return keys.count - 1
        }
        firstKeys = keys
    }

    /// The mismatches of `records`.
    package func mismatches(in records: PageRecords) -> ColumnMismatches {
        var found = ColumnMismatches()
        var record = 0
        var first = [Found](repeating: .nothing, count: firstKeys.count)
        records.forEach { _, json in
            defer { record += 1 }
            readFirstKeys(of: json, into: &first)
            for (column, index) in zip(columns, columns.indices) {
                if Self.mismatches(column, json, firstStep: firstKey[index].map { first[$0] }) {
                    found.append(record: record, column: index)
                }
            }
        }
        return found
    }

    /// Where the value of each of `firstKeys` lies in `json`, in one pass over its members.
    private func readFirstKeys(of json: UnsafeBufferPointer<UInt8>, into first: inout [Found]) {
        for index in first.indices { first[index] = .nothing }
        guard json.first == UInt8(ascii: "{") else { return }
        var left = firstKeys.count
        JSONText.forEachMember(of: json) { key, escaped, value in
            if escaped {
                // Only a parse can tell which key this is: every key not found yet is unsure.
                for index in first.indices {
                    if case .nothing = first[index] { first[index] = .unsure }
                }
                return false
            }
            for (wanted, index) in zip(firstKeys, firstKeys.indices) where wanted.count == key.count {
                guard case .nothing = first[index], wanted.elementsEqual(key) else { continue }
                first[index] = .value(value)
                left -= 1
            }
            return left > 0
        }
    }

    private enum Found {
        case value(Range<Int>)
        case nothing
        /// A key written with escapes comes first: the record is parsed.
        case unsure
    }

    /// Whether `column` is NULL for a value `json` holds: what its path's first key found, if it starts with a key.
    private static func mismatches(_ column: Column, _ json: UnsafeBufferPointer<UInt8>, firstStep: Found?) -> Bool {
        let found: Found
        switch firstStep {
        case let .value(range)?: found = locate(column.steps.dropFirst(), in: json, from: range)
        case let step?: found = step
        case nil: found = locate(column.steps[...], in: json, from: 0 ..< json.count)
        }
        switch found {
        case .nothing:
            return false
        case let .value(range):
            return mismatches(column.type, UnsafeBufferPointer(rebasing: json[range]))
        case .unsure:
            guard let document = try? JSONDocument(parsing: UnsafeRawBufferPointer(json)),
                  let value = value(column.steps, in: document.root) else { return false }
            return value.document.bytes.withUnsafeBufferPointer { bytes in
                mismatches(column.type, UnsafeBufferPointer(rebasing: bytes[value.byteRange]))
            }
        }
    }

    /// Where the value at `steps` lies in `json`, a compacted record, from the value at `range`.
    private static func locate(_ steps: ArraySlice<Column.Step>, in json: UnsafeBufferPointer<UInt8>, from range: Range<Int>) -> Found {
        var range = range
        for step in steps {
            let value = UnsafeBufferPointer(rebasing: json[range])
            switch step {
            case let .key(key, _):
                guard value.first == UInt8(ascii: "{") else { return .nothing }
                let member = key.withUnsafeBufferPointer { JSONText.member($0, in: value) }
                switch member {
                case let .value(inner): range = range.lowerBound + inner.lowerBound ..< range.lowerBound + inner.upperBound
                case .missing: return .nothing
                case .unsure: return .unsure
                }
            case let .index(wanted):
                guard value.first == UInt8(ascii: "[") else { return .nothing }
                var elements: [Range<Int>] = []
                JSONText.forEachElement(of: value) { element in
                    elements.append(element)
                    return wanted < 0 || elements.count <= wanted
                }
                let at = wanted < 0 ? elements.count + wanted : wanted
                guard elements.indices.contains(at) else { return .nothing }
                range = range.lowerBound + elements[at].lowerBound ..< range.lowerBound + elements[at].upperBound
            }
        }
        return .value(range)
    }

    /// The value at `steps` from `root`, a parsed record.
    private static func value(_ steps: [Column.Step], in root: JSONValue) -> JSONValue? {
        var value = root
        for step in steps {
            switch step {
            case let .key(_, key):
                guard let member = value[key] else { return nil }
                value = member
            case let .index(wanted):
                let elements = value.elements
                let at = wanted < 0 ? elements.count + wanted : wanted
                guard elements.indices.contains(at) else { return nil }
                value = elements[at]
            }
        }
        return value
    }

    /// Whether `text`, one JSON value's text, is a value a column of `type` makes NULL.
    private static func mismatches(_ type: RecordColumn.Kind, _ text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = text.first, first != UInt8(ascii: "n") else { return false }
        switch first {
        case UInt8(ascii: "\""):
            guard type == .text || type == .time else { return true }
            guard type == .time else { return false }
            let inner = UnsafeBufferPointer(rebasing: text[1 ..< text.count - 1])
            guard inner.contains(UInt8(ascii: "\\")) else { return !RecordColumn.isTime(inner) }
            return !RecordColumn.isTime(JSONText.unescape(inner))
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            return type != .boolean
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            return true
        default:
            switch type {
            case .real: return false
            case .integer: return text.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
            case .text, .boolean, .time: return true
            }
        }
    }
}
