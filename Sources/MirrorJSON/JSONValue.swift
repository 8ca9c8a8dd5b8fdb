/// A handle on one value of a document: the document (two copy-on-write arrays, not
/// copied) and a node index.

package struct JSONValue: Sendable {
    package let document: JSONDocument
    package let index: Int

    package init(document: JSONDocument, index: Int) {
        self.document = document
        self.index = index
    }

    private var node: JSONDocument.Node { document.nodes[index] }

    package var kind: JSONKind { node.kind }

    /// Where this value's compacted text lies in `document.bytes` (strings: with quotes).
    package var byteRange: Range<Int> {
        let node = node
        return Int(node.start) ..< Int(node.end)
    }

    package var rawBytes: ArraySlice<UInt8> { document.bytes[byteRange] }

    package var rawText: String { String(decoding: rawBytes, as: UTF8.self) }

    /// Elements of an array, members of an object; 0 for scalars.
    package var count: Int { Int(node.count) }

    /// A container whose children are not on the tape (see `unfolded`).
    var isFolded: Bool { node.isFolded }

    /// A string holding a backslash escape: its text is not its raw bytes.
    package var isEscaped: Bool { node.kind == .string && node.escaped }

    /// The same value with its children on a tape: a folded container (see
    /// `JSONDocument.init(parsing:foldingAt:)`) parsed again on its own, into a
    /// document of its own bytes; any other value as it is.
    var unfolded: JSONValue {
        guard node.isFolded else { return self }
        // Its bytes were checked when the page was parsed: parsing them again succeeds.
        let document = document.bytes.withUnsafeBytes { all in
            try? JSONDocument(parsing: UnsafeRawBufferPointer(rebasing: all[byteRange]))
        }
        return document?.root ?? self
    }

    /// An array's elements in order; empty for anything else.
    package var elements: [JSONValue] {
        guard node.kind == .array else { return [] }
        let open = unfolded
        var result: [JSONValue] = []
        result.reserveCapacity(count)
        _ = open.document.forEachChild(of: open.index) { child in
            result.append(JSONValue(document: open.document, index: child))
            return true
        }
        return result
    }

    /// An object's members in order, duplicates included.
    package var members: [(key: String, value: JSONValue)] {
        guard node.kind == .object else { return [] }
        let open = unfolded
        var result: [(key: String, value: JSONValue)] = []
        result.reserveCapacity(count)
        _ = open.document.forEachChild(of: open.index) { child in
            let key = JSONValue(document: open.document, index: child - 1).stringValue ?? ""
            result.append((key, JSONValue(document: open.document, index: child)))
            return true
        }
        return result
    }

    /// Object member lookup by unescaped key; the first of duplicate keys counts, as in
    /// SQLite's `json_extract` (Python's and JavaScript's parsers take the last). Nil for
    /// a missing key and for anything but an object.
    package subscript(key: String) -> JSONValue? {
        guard node.kind == .object else { return nil }
        let open = unfolded
        return open.document.member(of: open.index, named: key).map { JSONValue(document: open.document, index: $0) }
    }

    /// A string's unescaped text; nil for other kinds.
    package var stringValue: String? {
        let node = node
        guard node.kind == .string else { return nil }
        return document.bytes.withUnsafeBufferPointer { all in
            let inner = UnsafeBufferPointer(rebasing: all[Int(node.start) + 1 ..< Int(node.end) - 1])
            return node.escaped ? JSONText.unescape(inner) : String(decoding: inner, as: UTF8.self)
        }
    }

    /// A string's text, a number exactly as written, `true`/`false`; nil for null and
    /// containers.
    package var scalarText: String? {
        switch node.kind {
        case .string: return stringValue
        case .number: return rawText
        case .bool: return boolValue == true ? "true" : "false"
        case .null, .object, .array: return nil
        }
    }

    package var boolValue: Bool? {
        let node = node
        guard node.kind == .bool else { return nil }
        return document.bytes[Int(node.start)] == UInt8(ascii: "t")
    }

    /// A number written as an integer (no fraction, no exponent) that fits `Int`.
    package var intValue: Int? {
        let node = node
        guard node.kind == .number else { return nil }
        return document.bytes.withUnsafeBufferPointer { all in
            JSONText.integer(UnsafeBufferPointer(rebasing: all[Int(node.start) ..< Int(node.end)]))
        }
    }
}
