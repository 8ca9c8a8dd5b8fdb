/// The records of one fetched page, kept compactly: the page's compacted text, and for
/// each record where its JSON and its id lie in it (16 bytes a record). A page of four
/// million `{"id":N}` records costs its text and 64 MB, not a String and an array per
/// record.
import MirrorJSON

package struct PageRecords: Sendable {
    /// One record. Offsets fit in 31 bits: a page is at most `max_page_size` (1 GB).
    package struct Entry: Sendable {
        /// The record's compacted JSON: `bytes[start..<end]`.
        package var start: UInt32
        package var end: UInt32
        /// The id's UTF-8 text: `bytes[idStart..<idEnd]`, or, when `idStart` has
        /// `Entry.unescapedFlag` set, in `unescaped` (an id written with escapes).
        package var idStart: UInt32
        package var idEnd: UInt32

        package init(
            start: UInt32,
            end: UInt32,
            idStart: UInt32,
            idEnd: UInt32
        ) {
            self.start = start
            self.end = end
            self.idStart = idStart
            self.idEnd = idEnd
        }

        package static let unescapedFlag: UInt32 = 1 << 31
    }

    /// The compacted response the records point into.
    package let bytes: [UInt8]
    package let entries: [Entry]
    /// The text of the ids that were strings with escapes, unescaped.
    package let unescaped: [UInt8]

    package init(bytes: [UInt8], entries: [Entry], unescaped: [UInt8]) {
        self.bytes = bytes
        self.entries = entries
        self.unescaped = unescaped
    }

    package var count: Int { entries.count }

    /// Records written one at a time into text of their own, not into a response: what
    /// a page's records become once `drop:` and `hash:` have rewritten them. Each id is
    /// kept beside the texts, as an id written with escapes is.
    package struct Builder {
        private var bytes: [UInt8] = []
        private var entries: [Entry] = []
        private var ids: [UInt8] = []

        package init(capacity: Int, count: Int) {
            bytes.reserveCapacity(capacity)
            entries.reserveCapacity(count)
        }

        /// Adds a record: `write` appends its JSON text to the buffer it is given.
        package mutating func append(id: UnsafeBufferPointer<UInt8>, write: (inout [UInt8]) -> Void) {
            let start = bytes.count
            write(&bytes)
            let idStart = ids.count
            ids.append(contentsOf: id)
            entries.append(Entry(start: UInt32(start), end: UInt32(bytes.count),
                                 idStart: UInt32(idStart) | Entry.unescapedFlag, idEnd: UInt32(ids.count)))
        }

        package var records: PageRecords { PageRecords(bytes: bytes, entries: entries, unescaped: ids) }
    }

    /// The records whose index `isKept` says to keep, in page order.
    package func keeping(_ isKept: (Int) -> Bool) -> PageRecords {
        PageRecords(bytes: bytes, entries: entries.indices.filter(isKept).map { entries[$0] }, unescaped: unescaped)
    }

    /// Calls `body` with each record's id and JSON, in page order, as bytes valid only
    /// during the call.
    package func forEach(_ body: (_ id: UnsafeBufferPointer<UInt8>, _ json: UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try bytes.withUnsafeBufferPointer { page in
            try unescaped.withUnsafeBufferPointer { spill in
                for entry in entries {
                    try body(Self.id(entry, page: page, spill: spill),
                             UnsafeBufferPointer(rebasing: page[Int(entry.start) ..< Int(entry.end)]))
                }
            }
        }
    }

    /// The records by index, their bytes valid only inside `withTexts`: a store binds a
    /// batch of them to one statement without a copy.
    package struct Texts {
        let page: UnsafeBufferPointer<UInt8>
        let spill: UnsafeBufferPointer<UInt8>
        let entries: [Entry]

        package var count: Int { entries.count }

        /// Record `index`'s id.
        package func id(_ index: Int) -> UnsafeBufferPointer<UInt8> {
            PageRecords.id(entries[index], page: page, spill: spill)
        }

        /// Record `index`'s compacted JSON.
        package func json(_ index: Int) -> UnsafeBufferPointer<UInt8> {
            let entry = entries[index]
            return UnsafeBufferPointer(rebasing: page[Int(entry.start) ..< Int(entry.end)])
        }
    }

    /// Calls `body` with the records by index, as bytes valid only during the call.
    package func withTexts<R>(_ body: (Texts) throws -> R) rethrows -> R {
        try bytes.withUnsafeBufferPointer { page in
            try unescaped.withUnsafeBufferPointer { spill in
                try body(Texts(page: page, spill: spill, entries: entries))
            }
        }
    }

    /// Every record's id, in page order.
    package var ids: [String] {
        var ids: [String] = []
        ids.reserveCapacity(count)
        forEach { id, _ in ids.append(String(decoding: id, as: UTF8.self)) }
        return ids
    }

    /// The ids as a JSON array of strings, as `_mirror_pages.ids` keeps them.
    package var idsJSON: [UInt8] {
        var text: [UInt8] = []
        // Quotes and a comma each; escapes may add a little.
        text.reserveCapacity(entries.reduce(2) { $0 + Int($1.idEnd - ($1.idStart & ~Entry.unescapedFlag)) + 3 })
        text.append(UInt8(ascii: "["))
        var first = true
        forEach { id, _ in
            if !first { text.append(UInt8(ascii: ",")) }
            first = false
            JSONText.appendQuoted(id, to: &text)
        }
        text.append(UInt8(ascii: "]"))
        return text
    }

    private static func id(_ entry: Entry, page: UnsafeBufferPointer<UInt8>, spill: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        if entry.idStart & Entry.unescapedFlag != 0 {
            return UnsafeBufferPointer(rebasing: spill[Int(entry.idStart & ~Entry.unescapedFlag) ..< Int(entry.idEnd)])
        }
        return UnsafeBufferPointer(rebasing: page[Int(entry.idStart) ..< Int(entry.idEnd)])
    }
}
