/// Reads the records array of a page: each element's id (a non-empty string or a number
/// at the job's `id` path), the elements without one, and the ids listed more than once,
/// of which the last is kept. Ids are compared byte for byte, as SQLite compares them.
///
/// It keeps 16 bytes per record and a table of 4-byte slots for the dedupe, so that the
/// memory of a page of millions of tiny records stays a small multiple of its text.
import MirrorJSON
import MirrorModel

struct RecordCollector {
    struct Collected {
        package let records: PageRecords
        package let elementCount: Int
        package let rejected: [RejectedRecord]
        package let repeated: [RepeatedID]
    }

    let idPath: JSONPath
    package let page: Int

    /// Reads `list`: an array (folded or not: only its text is read), `null` (no
    /// records), or an object (one record).
    package func collect(_ list: JSONValue) -> Collected {
        let document = list.document
        let array = list.byteRange
        var entries: [PageRecords.Entry] = []
        entries.reserveCapacity(list.kind == .array ? list.count : 1)
        var unescaped: [UInt8] = []
        var rejected: [RejectedRecord] = []
        // Earlier indexes of the ids listed more than once, by id.
        var earlier: [ExactText: [Int]] = [:]
        var table = IDTable(count: list.kind == .array ? list.count : 1)
        /// An element with no usable id, or one listed again later, is not stored.
        let dropped = PageRecords.Entry(start: 0, end: 0, idStart: 0, idEnd: 0)

        document.bytes.withUnsafeBufferPointer { page in
            /// Calls `body` with the id text of `entry`.
            func withID<R>(_ entry: PageRecords.Entry, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
                guard entry.idStart & PageRecords.Entry.unescapedFlag != 0 else {
                    return body(UnsafeBufferPointer(rebasing: page[Int(entry.idStart) ..< Int(entry.idEnd)]))
                }
                return unescaped.withUnsafeBufferPointer { spill in
                    body(UnsafeBufferPointer(rebasing: spill[Int(entry.idStart & ~PageRecords.Entry.unescapedFlag) ..< Int(entry.idEnd)]))
                }
            }
            func add(_ local: Range<Int>) {
                let index = entries.count
                let record = array.lowerBound + local.lowerBound ..< array.lowerBound + local.upperBound
                // An id at a plain key of an object is found in the record's text; any other
                // record is parsed on its own (its offsets count from its first byte).
                if let entry = scan(page, record) {
                    keep(entry, index: index)
                    return
                }
                let element = try? JSONDocument(parsing: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: page[record])))
                guard let element, let entry = locate(element.root, at: record, unescaped: &unescaped) else {
                    let problem = element.map { reason(for: $0.root, index: index) } ?? "record \(index) is not JSON"
                    rejected.append(RejectedRecord(page: self.page, index: index, reason: problem))
                    entries.append(dropped)
                    return
                }
                keep(entry, index: index)
            }
            /// Keeps the record of `entry`, and drops an earlier one with its id.
            func keep(_ entry: PageRecords.Entry, index: Int) {
                entries.append(entry)
                let hash = withID(entry) { text in
                    var hasher = Hasher()
                    hasher.combine(bytes: UnsafeRawBufferPointer(text))
                    return hasher.finalize()
                }
                let before = table.insert(Int32(index), hash: hash) { other in
                    withID(entry) { text in
                        withID(entries[Int(other)]) { $0.count == text.count && $0.elementsEqual(text) }
                    }
                }
                if let before {
                    entries[Int(before)] = dropped
                    earlier[ExactText(withID(entry) { String(decoding: $0, as: UTF8.self) }), default: []].append(Int(before))
                }
            }
            switch list.kind {
            case .array:
                JSONText.forEachElement(of: UnsafeBufferPointer(rebasing: page[array])) { element in
                    add(element)
                    return true
                }
            case .object: add(0 ..< array.count)
            case .string, .number, .bool, .null: break
            }
        }
        let count = entries.count
        var repeated: [RepeatedID] = []
        if !earlier.isEmpty {
            // Listed by where the kept record stands in the page.
            let records = PageRecords(bytes: document.bytes, entries: entries, unescaped: unescaped)
            var index = 0
            records.forEach { id, json in
                defer { index += 1 }
                guard !json.isEmpty else { return }
                let text = String(decoding: id, as: UTF8.self)
                if let before = earlier[ExactText(text)] {
                    repeated.append(RepeatedID(page: page, id: text, indexes: before + [index]))
                }
            }
        }
        entries.removeAll { $0.end == 0 }
        return Collected(records: PageRecords(bytes: document.bytes, entries: entries, unescaped: unescaped),
                         elementCount: count, rejected: rejected, repeated: repeated)
    }

    /// The record and its id, found without a parse when the id path is one key, the
    /// record an object and its id a number or a string without escapes; nil otherwise
    /// (the record is then parsed, and rejected there if it has no usable id).
    private func scan(_ page: UnsafeBufferPointer<UInt8>, _ record: Range<Int>) -> PageRecords.Entry? {
        guard idPath.segments.count == 1, case let .key(key) = idPath.segments[0],
              page[record.lowerBound] == UInt8(ascii: "{") else { return nil }
        let found = key.utf8.withContiguousStorageIfAvailable { key in
            JSONText.member(key, in: UnsafeBufferPointer(rebasing: page[record]))
        }
        guard case let .value(local)? = found else { return nil }
        let start = record.lowerBound + local.lowerBound, end = record.lowerBound + local.upperBound
        let first = page[start]
        if first == UInt8(ascii: "\"") {
            let inner = start + 1 ..< end - 1
            guard !inner.isEmpty, !page[inner].contains(UInt8(ascii: "\\")) else { return nil }
            return PageRecords.Entry(start: UInt32(record.lowerBound), end: UInt32(record.upperBound),
                                     idStart: UInt32(inner.lowerBound), idEnd: UInt32(inner.upperBound))
        }
        guard first == UInt8(ascii: "-") || (first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")) else { return nil }
        return PageRecords.Entry(start: UInt32(record.lowerBound), end: UInt32(record.upperBound),
                                 idStart: UInt32(start), idEnd: UInt32(end))
    }

    /// Where `element` (the root of the record's own document) and its id lie in the
    /// page's bytes, the record being at `record`; nil if it has no usable id.
    private func locate(_ element: JSONValue, at record: Range<Int>, unescaped: inout [UInt8]) -> PageRecords.Entry? {
        guard let value = element.value(at: idPath) else { return nil }
        let base = record.lowerBound
        let range = value.byteRange
        switch value.kind {
        case .number:
            return PageRecords.Entry(start: UInt32(record.lowerBound), end: UInt32(record.upperBound),
                                     idStart: UInt32(base + range.lowerBound), idEnd: UInt32(base + range.upperBound))
        case .string where range.count > 2:
            guard value.isEscaped else {
                return PageRecords.Entry(start: UInt32(record.lowerBound), end: UInt32(record.upperBound),
                                         idStart: UInt32(base + range.lowerBound + 1), idEnd: UInt32(base + range.upperBound - 1))
            }
            // `"\u0000"` unescapes to one byte, never to nothing.
            let start = unescaped.count
            unescaped.append(contentsOf: value.stringValue?.utf8 ?? "".utf8)
            return PageRecords.Entry(start: UInt32(record.lowerBound), end: UInt32(record.upperBound),
                                     idStart: UInt32(start) | PageRecords.Entry.unescapedFlag, idEnd: UInt32(unescaped.count))
        default:
            return nil
        }
    }

    private func reason(for element: JSONValue, index: Int) -> String {
        let value = element.value(at: idPath)
        if value == nil, element.kind != .object {
            let kind = element.kind == .null ? "null" : element.kind == .array ? "an array" : "a \(element.kind)"
            return "record \(index) is \(kind), not an object"
        }
        return "record \(index) has no usable id at '\(idPath)' (found \(value.map { "\($0.kind)" } ?? "nothing"))"
    }
}

/// An open-addressing set of record indexes keyed by id, 4 bytes a slot, at most half
/// full. The caller hashes the id and says whether a stored index has the same one.
struct IDTable {
    private var slots: [Int32]
    private let mask: Int

    package init(count: Int) {
        var capacity = 16
        while capacity < 2 * count { capacity <<= 1 }
        slots = Array(repeating: -1, count: capacity)
        mask = capacity - 1
    }

    /// Puts `index` in the set. If an index with the same id was there, it is replaced
    /// and returned.
    package mutating func insert(_ index: Int32, hash: Int, matching: (Int32) -> Bool) -> Int32? {
        var slot = hash & mask
        while true {
            let occupant = slots[slot]
            if occupant < 0 {
                slots[slot] = index
                return nil
            }
            if matching(occupant) {
                slots[slot] = index
                return occupant
            }
            slot = (slot + 1) & mask
        }
    }
}
