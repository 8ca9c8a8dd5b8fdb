/// The kind of a JSON value.
public enum JSONKind: UInt8, Sendable, Equatable, CustomStringConvertible {
    case object, array, string, number, bool, null

    public var description: String {
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
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public let offset: Int
    public let message: String
    public var description: String { message }
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
public struct JSONDocument: Sendable {
    /// One value on the tape. 20 bytes; offsets are 32-bit, so a document is limited to
    /// 4 GiB (checked).
    struct Node: Sendable {
        /// Offset in `bytes` of the value's first byte (for strings: the opening quote).
        var start: UInt32
        /// Offset in `bytes` just past the value's last byte.
        var end: UInt32
        /// Index of the node just past this value's subtree: its next sibling, if any.
        var next: UInt32
        /// Elements of an array, members of an object, 0 for scalars.
        var count: UInt32
        var kind: JSONKind
        /// A string holds a backslash escape, so its text is not its raw bytes.
        var escaped: Bool
    }

    /// Containers nested deeper than this are rejected.
    public static let maximumDepth = 512

    /// The compacted document.
    public let bytes: [UInt8]
    let nodes: [Node]

    public init(parsing input: [UInt8]) throws(JSONSyntaxError) {
        // `withUnsafeBytes` rethrows untyped errors: carry the typed one across in a Result.
        let parsed = input.withUnsafeBytes { raw in
            Result { () throws(JSONSyntaxError) in try JSONDocument(parsing: raw) }
        }
        self = try parsed.get()
    }

    public init(parsing input: UnsafeRawBufferPointer) throws(JSONSyntaxError) {
        guard let base = input.baseAddress, !input.isEmpty else {
            throw JSONSyntaxError(offset: 0, message: "unexpected end of input")
        }
        guard input.count < Int(UInt32.max) else {
            throw JSONSyntaxError(offset: 0, message: "document larger than 4 GiB")
        }
        // The compacted text is never longer than the input, so it is written straight
        // into an array of the input's capacity: no copy at the end.
        var nodes: [Node] = []
        var failure: JSONSyntaxError?
        let bytes = [UInt8](unsafeUninitializedCapacity: input.count) { buffer, initialized in
            var parser = JSONParser(input: base, count: input.count, output: buffer.baseAddress!)
            do throws(JSONSyntaxError) {
                try parser.parseDocument()
                initialized = parser.written
                nodes = parser.nodes
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        self.bytes = bytes
        self.nodes = nodes
    }

    /// The top-level value.
    public var root: JSONValue { JSONValue(document: self, index: 0) }

    /// The node index of the last member of object `object` named `key`, or nil.
    func member(of object: Int, named key: String) -> Int? {
        key.utf8.withContiguousStorageIfAvailable { member(of: object, named: $0) }
            ?? Array(key.utf8).withUnsafeBufferPointer { member(of: object, named: $0) }
    }

    func member(of object: Int, named key: UnsafeBufferPointer<UInt8>) -> Int? {
        bytes.withUnsafeBufferPointer { all in
            nodes.withUnsafeBufferPointer { tape in
                let container = tape[object]
                guard container.kind == .object else { return nil }
                var found: Int?
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
                    if matches { found = child + 1 }
                    child = Int(tape[child + 1].next)
                }
                return found
            }
        }
    }

    /// The node index of element `position` of array `array`, or nil.
    func element(of array: Int, at position: Int) -> Int? {
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

/// A handle on one value of a document: the document (two copy-on-write arrays, not
/// copied) and a node index.
public struct JSONValue: Sendable {
    let document: JSONDocument
    let index: Int

    private var node: JSONDocument.Node { document.nodes[index] }

    public var kind: JSONKind { node.kind }

    /// Where this value's compacted text lies in `document.bytes` (strings: with quotes).
    public var byteRange: Range<Int> {
        let node = node
        return Int(node.start) ..< Int(node.end)
    }

    public var rawBytes: ArraySlice<UInt8> { document.bytes[byteRange] }

    public var rawText: String { String(decoding: rawBytes, as: UTF8.self) }

    /// Elements of an array, members of an object; 0 for scalars.
    public var count: Int { Int(node.count) }

    /// An array's elements in order; empty for anything else.
    public var elements: [JSONValue] {
        guard node.kind == .array else { return [] }
        var result: [JSONValue] = []
        result.reserveCapacity(count)
        _ = document.forEachChild(of: index) { child in
            result.append(JSONValue(document: document, index: child))
            return true
        }
        return result
    }

    /// An object's members in order, duplicates included.
    public var members: [(key: String, value: JSONValue)] {
        guard node.kind == .object else { return [] }
        var result: [(key: String, value: JSONValue)] = []
        result.reserveCapacity(count)
        _ = document.forEachChild(of: index) { child in
            let key = JSONValue(document: document, index: child - 1).stringValue ?? ""
            result.append((key, JSONValue(document: document, index: child)))
            return true
        }
        return result
    }

    /// Object member lookup by unescaped key; the last of duplicate keys wins. Nil for
    /// a missing key and for anything but an object.
    public subscript(key: String) -> JSONValue? {
        guard node.kind == .object else { return nil }
        return document.member(of: index, named: key).map { JSONValue(document: document, index: $0) }
    }

    /// A string's unescaped text; nil for other kinds.
    public var stringValue: String? {
        let node = node
        guard node.kind == .string else { return nil }
        return document.bytes.withUnsafeBufferPointer { all in
            let inner = UnsafeBufferPointer(rebasing: all[Int(node.start) + 1 ..< Int(node.end) - 1])
            return node.escaped ? JSONText.unescape(inner) : String(decoding: inner, as: UTF8.self)
        }
    }

    /// A string's text, a number exactly as written, `true`/`false`; nil for null and
    /// containers.
    public var scalarText: String? {
        switch node.kind {
        case .string: return stringValue
        case .number: return rawText
        case .bool: return boolValue == true ? "true" : "false"
        case .null, .object, .array: return nil
        }
    }

    public var boolValue: Bool? {
        let node = node
        guard node.kind == .bool else { return nil }
        return document.bytes[Int(node.start)] == UInt8(ascii: "t")
    }

    /// A number written as an integer (no fraction, no exponent) that fits `Int`.
    public var intValue: Int? {
        let node = node
        guard node.kind == .number else { return nil }
        return document.bytes.withUnsafeBufferPointer { all in
            JSONText.integer(UnsafeBufferPointer(rebasing: all[Int(node.start) ..< Int(node.end)]))
        }
    }
}

/// The one-pass validating, compacting parser. It reads `input` once, writes the
/// compacted text to `output` and appends to the tape as values end.
///
/// Containers are handled without recursion: the innermost open container's node index,
/// kind and element count live in locals, and while a container is open its node's
/// `next` and `count` fields park the enclosing container's index and count.
struct JSONParser {
    private let input: UnsafeRawPointer
    private let count: Int
    private let output: UnsafeMutablePointer<UInt8>
    /// Bytes of input read.
    private var position = 0
    /// Bytes of compacted text written; never more than `position`.
    private(set) var written = 0
    private(set) var nodes: [JSONDocument.Node] = []

    private static let noParent = UInt32.max

    init(input: UnsafeRawPointer, count: Int, output: UnsafeMutablePointer<UInt8>) {
        self.input = input
        self.count = count
        self.output = output
        // About one value per 16 bytes is generous for API responses; the tape grows
        // if a document is denser.
        nodes.reserveCapacity(count / 16 + 16)
    }

    // MARK: Structure

    mutating func parseDocument() throws(JSONSyntaxError) {
        var parent = -1
        var parentIsObject = false
        var elements: UInt32 = 0
        var depth = 0
        skipWhitespace()
        while true {
            // A value starts at `position`.
            guard position < count else { throw unexpected() }
            let byte = self[position]
            switch byte {
            case UInt8(ascii: "\""):
                try parseString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                guard depth <= JSONDocument.maximumDepth else {
                    throw JSONSyntaxError(offset: position,
                                          message: "nesting deeper than \(JSONDocument.maximumDepth) levels")
                }
                let isObject = byte == UInt8(ascii: "{")
                nodes.append(JSONDocument.Node(
                    start: UInt32(truncatingIfNeeded: written), end: 0,
                    next: parent < 0 ? Self.noParent : UInt32(truncatingIfNeeded: parent), count: elements,
                    kind: isObject ? .object : .array, escaped: false))
                parent = nodes.count - 1
                parentIsObject = isObject
                elements = 0
                emit(byte)
                skipWhitespace()
                if position < count, self[position] == byte + 2 {  // `}` and `]` follow `{` and `[` by 2
                    emit(byte + 2)
                    close(&parent, &parentIsObject, &elements)
                    depth -= 1
                } else {
                    if isObject { try parseKey() }
                    continue
                }
            case UInt8(ascii: "-"), UInt8(ascii: "0") ... UInt8(ascii: "9"):
                try parseNumber()
            case UInt8(ascii: "t"):
                try parseLiteral(0x6575_7274, length: 4, kind: .bool)  // "true", little-endian
            case UInt8(ascii: "f"):
                try parseLiteral(0x6573_6C61_66, length: 5, kind: .bool)  // "false"
            case UInt8(ascii: "n"):
                try parseLiteral(0x6C6C_756E, length: 4, kind: .null)  // "null"
            default:
                throw unexpected()
            }
            // A value ended: a comma starts the next one, a bracket closes its container.
            while true {
                guard parent >= 0 else {
                    skipWhitespace()
                    guard position == count else {
                        throw JSONSyntaxError(offset: position,
                                              message: "extra data after the JSON value at byte \(position)")
                    }
                    return
                }
                elements += 1
                skipWhitespace()
                guard position < count else { throw unexpected() }
                let byte = self[position]
                if byte == UInt8(ascii: ",") {
                    emit(byte)
                    skipWhitespace()
                    if parentIsObject { try parseKey() }
                    break
                }
                guard byte == (parentIsObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { throw unexpected() }
                emit(byte)
                close(&parent, &parentIsObject, &elements)
                depth -= 1
            }
        }
    }

    /// Finishes the open container `parent` (its closing bracket written) and makes the
    /// enclosing one current again.
    private mutating func close(_ parent: inout Int, _ parentIsObject: inout Bool, _ elements: inout UInt32) {
        let enclosing = nodes[parent].next
        let enclosingElements = nodes[parent].count
        nodes[parent].end = UInt32(truncatingIfNeeded: written)
        nodes[parent].next = UInt32(truncatingIfNeeded: nodes.count)
        nodes[parent].count = elements
        parent = enclosing == Self.noParent ? -1 : Int(enclosing)
        parentIsObject = parent >= 0 && nodes[parent].kind == .object
        elements = enclosingElements
    }

    /// A member name, the colon and the whitespace before the value.
    private mutating func parseKey() throws(JSONSyntaxError) {
        guard position < count, self[position] == UInt8(ascii: "\"") else { throw unexpected() }
        try parseString()
        skipWhitespace()
        guard position < count, self[position] == UInt8(ascii: ":") else { throw unexpected() }
        emit(UInt8(ascii: ":"))
        skipWhitespace()
    }

    // MARK: Scalars

    private mutating func parseString() throws(JSONSyntaxError) {
        let start = written
        var escaped = false
        emit(UInt8(ascii: "\""))
        while true {
            // Eight bytes at a time: copy the word, then keep the bytes before the first
            // one that needs a look. The copy cannot overrun: written <= position.
            while position + 8 <= count {
                let word = input.loadUnaligned(fromByteOffset: position, as: UInt64.self)
                UnsafeMutableRawPointer(output + written).storeBytes(of: word, as: UInt64.self)
                let special = Self.specialBytes(UInt64(littleEndian: word))
                guard special == 0 else {
                    let plain = special.trailingZeroBitCount >> 3
                    position += plain
                    written += plain
                    break
                }
                position += 8
                written += 8
            }
            guard position < count else { throw unexpected() }
            let byte = self[position]
            if byte == UInt8(ascii: "\"") {
                emit(byte)
                break
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
                try copyEscape()
            } else if byte >= 0x80 {
                try copyUTF8Sequence(lead: byte)
            } else if byte < 0x20 {
                throw JSONSyntaxError(offset: position, message: "control character in string at byte \(position)")
            } else {
                emit(byte)  // near the end of the input, where the word loop stops
            }
        }
        appendScalar(.string, start: start, escaped: escaped)
    }

    /// Bytes of `word` (little-endian) that end or interrupt a plain run of string
    /// content: `"`, `\`, control characters and non-ASCII, each flagged by its high
    /// bit. Borrows only propagate upwards, so the lowest flag is always exact.
    @inline(__always)
    private static func specialBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let zeroInQuote = (quote &- ones) & ~quote
        let zeroInBackslash = (backslash &- ones) & ~backslash
        let control = (word &- ones &* 0x20) & ~word
        return (zeroInQuote | zeroInBackslash | control | word) & highs
    }

    /// Copies the escape at `position` after checking it.
    @inline(__always)
    private mutating func copyEscape() throws(JSONSyntaxError) {
        let backslash = position
        guard position + 1 < count else { throw JSONSyntaxError(offset: count, message: "unexpected end of input") }
        switch self[position + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            copy(2)
        case UInt8(ascii: "u"):
            for offset in 2 ... 5 {
                guard position + offset < count else {
                    throw JSONSyntaxError(offset: count, message: "unexpected end of input")
                }
                guard JSONText.hexValue(self[position + offset]) != nil else {
                    throw JSONSyntaxError(offset: backslash, message: "invalid escape '\\u' at byte \(backslash)")
                }
            }
            copy(6)
        case let code:
            let shown = Self.isPrintable(code) ? " '\\\(Character(Unicode.Scalar(code)))'" : ""
            throw JSONSyntaxError(offset: backslash, message: "invalid escape\(shown) at byte \(backslash)")
        }
    }

    /// Copies the UTF-8 sequence starting with `lead` at `position` after checking it
    /// is well formed: no overlong forms, no surrogates, nothing above U+10FFFF, not cut
    /// short.
    @inline(__always)
    private mutating func copyUTF8Sequence(lead: UInt8) throws(JSONSyntaxError) {
        // The allowed range of the second byte depends on the lead; later ones are 80...BF.
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2 ... 0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1 ... 0xEC, 0xEE ... 0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1 ... 0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: throw invalidUTF8()
        }
        guard position + length <= count else { throw invalidUTF8() }
        let second = self[position + 1]
        guard second >= low, second <= high else { throw invalidUTF8() }
        var offset = 2
        while offset < length {
            guard self[position + offset] & 0xC0 == 0x80 else { throw invalidUTF8() }
            offset += 1
        }
        copy(length)
    }

    private mutating func parseNumber() throws(JSONSyntaxError) {
        let begin = position
        if self[position] == UInt8(ascii: "-") { position += 1 }
        guard position < count else { throw unexpected() }
        if self[position] == UInt8(ascii: "0") {
            position += 1
        } else if !skipDigits() {
            throw unexpected()
        }
        if position < count, self[position] == UInt8(ascii: ".") {
            position += 1
            guard skipDigits() else { throw unexpected() }
        }
        if position < count, self[position] | 0x20 == UInt8(ascii: "e") {
            position += 1
            if position < count, self[position] == UInt8(ascii: "+") || self[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard skipDigits() else { throw unexpected() }
        }
        let start = written
        UnsafeMutableRawPointer(output + written).copyMemory(from: input + begin, byteCount: position - begin)
        written += position - begin
        appendScalar(.number, start: start)
    }

    /// Skips a run of decimal digits; false if there was none.
    @inline(__always)
    private mutating func skipDigits() -> Bool {
        let begin = position
        while position < count, self[position] &- UInt8(ascii: "0") < 10 { position += 1 }
        return position > begin
    }

    /// `true`, `false` or `null`, given as its bytes packed little-endian.
    private mutating func parseLiteral(_ packed: UInt64, length: Int, kind: JSONKind) throws(JSONSyntaxError) {
        let start = written
        for offset in 0 ..< length {
            guard position < count, self[position] == UInt8(truncatingIfNeeded: packed >> (8 * offset)) else {
                throw unexpected()
            }
            emit(self[position])
        }
        appendScalar(kind, start: start)
    }

    // MARK: Bytes

    @inline(__always)
    private subscript(offset: Int) -> UInt8 {
        input.load(fromByteOffset: offset, as: UInt8.self)
    }

    /// Writes `byte` (the input byte just read) and moves past it.
    @inline(__always)
    private mutating func emit(_ byte: UInt8) {
        output[written] = byte
        written += 1
        position += 1
    }

    /// Copies `length` input bytes as they are.
    @inline(__always)
    private mutating func copy(_ length: Int) {
        for offset in 0 ..< length { output[written + offset] = self[position + offset] }
        written += length
        position += length
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while position < count {
            let byte = self[position]
            guard byte <= 0x20, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
            position += 1
        }
    }

    @inline(__always)
    private mutating func appendScalar(_ kind: JSONKind, start: Int, escaped: Bool = false) {
        nodes.append(JSONDocument.Node(
            start: UInt32(truncatingIfNeeded: start), end: UInt32(truncatingIfNeeded: written),
            next: UInt32(truncatingIfNeeded: nodes.count + 1), count: 0, kind: kind, escaped: escaped))
    }

    // MARK: Errors

    private static func isPrintable(_ byte: UInt8) -> Bool { byte >= 0x20 && byte < 0x7F }

    /// The byte at `position` is not allowed there, or the input ended.
    private func unexpected() -> JSONSyntaxError {
        guard position < count else { return JSONSyntaxError(offset: count, message: "unexpected end of input") }
        let byte = self[position]
        guard Self.isPrintable(byte) else {
            return JSONSyntaxError(offset: position, message: "unexpected byte \(JSONText.hexByte(byte)) at byte \(position)")
        }
        return JSONSyntaxError(offset: position,
                               message: "unexpected character '\(Character(Unicode.Scalar(byte)))' at byte \(position)")
    }

    private func invalidUTF8() -> JSONSyntaxError {
        JSONSyntaxError(offset: position, message: "invalid UTF-8 at byte \(position)")
    }
}

/// Writing and reading the text of JSON strings and numbers.
public enum JSONText {
    /// Appends `s` as a quoted JSON string: `"`, `\` and control characters escaped (as
    /// `\n`, `\t`, `\r`, `\b`, `\f` or `\u00XX`), everything else, non-ASCII included,
    /// as its UTF-8.
    public static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        out.reserveCapacity(out.count + s.utf8.count + 2)
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(byte)
            case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
            case 0x08: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "f"))
            case 0 ..< 0x20:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        hexDigit(byte >> 4), hexDigit(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Decodes the content (between the quotes) of a string the parser has checked. A
    /// `\u` escape of an unpaired surrogate becomes U+FFFD.
    static func unescape(_ raw: UnsafeBufferPointer<UInt8>) -> String {
        // Decoding never lengthens: `\n` is 2 bytes for 1, `\uXXXX` 6 for at most 3, a
        // surrogate pair 12 for 4.
        String(unsafeUninitializedCapacity: raw.count) { out in
            var read = 0, written = 0
            func put(_ byte: UInt8) {
                out[written] = byte
                written += 1
            }
            while read < raw.count {
                let byte = raw[read]
                guard byte == UInt8(ascii: "\\") else {
                    put(byte)
                    read += 1
                    continue
                }
                let code = raw[read + 1]
                read += 2
                switch code {
                case UInt8(ascii: "b"): put(0x08)
                case UInt8(ascii: "f"): put(0x0C)
                case UInt8(ascii: "n"): put(0x0A)
                case UInt8(ascii: "r"): put(0x0D)
                case UInt8(ascii: "t"): put(0x09)
                case UInt8(ascii: "u"):
                    var scalar = hex4(raw, at: read)
                    read += 4
                    if scalar & 0xF800 == 0xD800 {
                        // A high surrogate followed by an escaped low one is one scalar.
                        let low = scalar < 0xDC00 && read + 6 <= raw.count && raw[read] == UInt8(ascii: "\\")
                            && raw[read + 1] == UInt8(ascii: "u") ? hex4(raw, at: read + 2) : 0
                        if low & 0xFC00 == 0xDC00 {
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                            read += 6
                        } else {
                            scalar = 0xFFFD
                        }
                    }
                    for unit in UTF8.encode(Unicode.Scalar(scalar) ?? "\u{FFFD}")! { put(unit) }
                default: put(code)  // `"`, `\`, `/`
                }
            }
            return written
        }
    }

    /// Four hex digits the parser has checked.
    private static func hex4(_ raw: UnsafeBufferPointer<UInt8>, at index: Int) -> UInt32 {
        var value: UInt32 = 0
        for offset in 0 ..< 4 { value = value << 4 | UInt32(hexValue(raw[index + offset]) ?? 0) }
        return value
    }

    /// A number's literal as an `Int` if it is written as an integer and fits.
    static func integer(_ literal: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let first = literal.first else { return nil }
        let negative = first == UInt8(ascii: "-")
        var value = 0
        for byte in literal.dropFirst(negative ? 1 : 0) {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            // Accumulate negatively so that Int.min fits.
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = times10.subtractingReportingOverflow(Int(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = next
        }
        if negative { return value }
        return value == Int.min ? nil : -value
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// `0xAB` for messages.
    static func hexByte(_ byte: UInt8) -> String {
        String(decoding: [UInt8(ascii: "0"), UInt8(ascii: "x"), upperHexDigit(byte >> 4), upperHexDigit(byte & 0xF)],
               as: UTF8.self)
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    private static func upperHexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }

    /// Whether `count` bytes at `a` and `b` are equal.
    @inline(__always)
    static func equal(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>?, _ count: Int) -> Bool {
        guard count > 0, let b else { return true }
        for offset in 0 ..< count where a[offset] != b[offset] { return false }
        return true
    }
}
