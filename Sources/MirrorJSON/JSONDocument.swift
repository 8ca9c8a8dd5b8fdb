/// The kind of a JSON value.

package enum JSONKind: UInt8, Sendable, Equatable, CustomStringConvertible {
    case object, array, string, number, bool, null

    package var description: String {
        switch self {
        case .object: return "object"
        case .array: return "array"
        case .string: return "string"
        case .number: return "number"
        case .bool: return "bool"
        case .null: return "null"
        }
    }
}

/// Why a response is not JSON: a lowercase message and the byte offset in the original
/// input (not in the compacted copy).
package struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    package let offset: Int
    package let message: String
    package var description: String { message }
}

/// A strictly validated (RFC 8259) JSON document, kept as its compacted text plus a flat
/// tape of nodes pointing into that text.
///
/// Compacted means whitespace outside strings is dropped and every other byte is kept as
/// served: numbers digit for digit (a 22-digit id survives), strings with their escapes.
/// A value's `rawBytes` is therefore one NDJSON-ready line.
///
/// The tape lists values in document order, a container before its children, an object's
/// members as key, value, key, value. Each node knows the index just past its subtree, so
/// walking siblings skips whole subtrees in one step. Parsing is one pass over the input
/// and costs two allocations: the compacted bytes and the tape.
package struct JSONDocument: Sendable {
    /// One value on the tape. 20 bytes; offsets are 32-bit, so a document is limited to
    /// 4 GiB (checked).
    package struct Node: Sendable {
        /// Offset in `bytes` of the value's first byte (for strings: the opening quote).
        package var start: UInt32
        /// Offset in `bytes` just past the value's last byte.
        package var end: UInt32
        /// Index of the node just past this value's subtree: its next sibling, if any.
        package var next: UInt32
        /// Elements of an array, members of an object, 0 for scalars.
        package var count: UInt32
        package var kind: JSONKind
        /// A string holds a backslash escape, so its text is not its raw bytes; a
        /// container is folded (see `foldingAt`): its children are not on the tape.
        package var escaped: Bool

        var isFolded: Bool { escaped && (kind == .object || kind == .array) }
    }

    /// Containers nested deeper than this are rejected.
    package static let maximumDepth = 512

    /// The compacted document.
    package let bytes: [UInt8]
    package let nodes: [Node]

    package init(parsing input: [UInt8]) throws(JSONSyntaxError) {
        // `withUnsafeBytes` rethrows untyped errors: carry the typed one across in a Result.
        let parsed = input.withUnsafeBytes { raw in
            Result { () throws(JSONSyntaxError) in try JSONDocument(parsing: raw) }
        }
        self = try parsed.get()
    }

    /// Parses `input`. With `foldingAt` N, the containers at nesting depth N (the
    /// top-level value's is 1) are checked and compacted like the rest, but kept on the
    /// tape as one node each, parsed again when a path looks inside one: a page's
    /// records array of a million small records then costs one node, not millions.
    package init(parsing input: UnsafeRawBufferPointer, foldingAt foldDepth: Int = 0) throws(JSONSyntaxError) {
        guard let base = input.baseAddress, !input.isEmpty else {
            throw JSONSyntaxError(offset: 0, message: "unexpected end of input")
        }
        guard input.count < Int(UInt32.max) else {
            throw JSONSyntaxError(offset: 0, message: "document larger than 4 GiB")
        }
        // The compacted text is never longer than the input, so it is written straight
        // into an array of the input's capacity: no copy at the end.
        var parsed: Result<[Node], JSONSyntaxError> = .success([])
        let bytes = [UInt8](unsafeUninitializedCapacity: input.count) { buffer, initialized in
            parsed = Self.parse(base, count: input.count, into: buffer.baseAddress!, foldDepth: foldDepth, written: &initialized)
        }
        self.nodes = try parsed.get()
        self.bytes = bytes
    }

    /// Runs the parser over `count` bytes at `input`, writing the compacted text to
    /// `output` (which may be `input`); `written` is its length, 0 on failure.
    private static func parse(_ input: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<UInt8>,
                              foldDepth: Int, written: inout Int) -> Result<[Node], JSONSyntaxError> {
        var parser = JSONParser(input: input, count: count, output: output, foldDepth: foldDepth)
        do throws(JSONSyntaxError) {
            try parser.parseDocument()
            written = parser.written
            return .success(parser.nodes)
        } catch {
            written = 0
            return .failure(error)
        }
    }

    /// Parses `input`, compacting it in place: the document keeps `input`'s storage, so
    /// a page's body and its compacted text are one buffer, not two (when the caller
    /// hands over the only reference to it).
    package init(compacting input: consuming [UInt8], foldingAt foldDepth: Int = 0) throws(JSONSyntaxError) {
        let count = input.count
        guard count > 0 else { throw JSONSyntaxError(offset: 0, message: "unexpected end of input") }
        guard count < Int(UInt32.max) else {
            throw JSONSyntaxError(offset: 0, message: "document larger than 4 GiB")
        }
        var written = 0
        let parsed = input.withUnsafeMutableBufferPointer { buffer in
            Self.parse(UnsafeRawPointer(buffer.baseAddress!), count: count, into: buffer.baseAddress!, foldDepth: foldDepth,
                       written: &written)
        }
        nodes = try parsed.get()
        input.removeLast(count - written)
        bytes = input
    }

    /// The top-level value.
    package var root: JSONValue { JSONValue(document: self, index: 0) }

    /// The node index of the last member of object `object` named `key`, or nil.
    package func member(of object: Int, named key: String) -> Int? {
        key.utf8.withContiguousStorageIfAvailable { member(of: object, named: $0) }
            ?? Array(key.utf8).withUnsafeBufferPointer { member(of: object, named: $0) }
    }

    package func member(of object: Int, named key: UnsafeBufferPointer<UInt8>) -> Int? {
        bytes.withUnsafeBufferPointer { all in
            nodes.withUnsafeBufferPointer { tape in
                let container = tape[object]
                guard container.kind == .object else { return nil }
                var child = object + 1
                for _ in 0 ..< container.count {
                    let name = tape[child]
                    let matches: Bool
                    if name.escaped {
                        matches = JSONText.unescape(UnsafeBufferPointer(
                            rebasing: all[Int(name.start) + 1 ..< Int(name.end) - 1])).utf8.elementsEqual(key)
                    } else {
                        let start = Int(name.start) + 1
                        matches = Int(name.end) - 1 - start == key.count
                            && JSONText.equal(all.baseAddress! + start, key.baseAddress, key.count)
                    }
                    // The first of duplicate keys counts, as SQLite's JSON functions read it.
                    if matches { return child + 1 }
                    child = Int(tape[child + 1].next)
                }
                return nil
            }
        }
    }

    /// The node index of element `position` of array `array`, or nil.
    package func element(of array: Int, at position: Int) -> Int? {
        nodes.withUnsafeBufferPointer { tape in
            guard tape[array].kind == .array, position >= 0, position < Int(tape[array].count) else { return nil }
            var child = array + 1
            for _ in 0 ..< position { child = Int(tape[child].next) }
            return child
        }
    }

    /// Calls `body` with the node index of every element of an array or every member
    /// value of an object, in order, while it returns true. Returns false if stopped.
    func forEachChild(of container: Int, _ body: (Int) -> Bool) -> Bool {
        let node = nodes[container]
        let isObject = node.kind == .object
        guard isObject || node.kind == .array else { return true }
        var child = container + 1
        for _ in 0 ..< node.count {
            if isObject { child += 1 }
            guard body(child) else { return false }
            child = Int(nodes[child].next)
        }
        return true
    }
}
