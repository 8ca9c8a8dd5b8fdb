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
    package private(set) var written = 0
    package private(set) var nodes: [JSONDocument.Node] = []
    /// Containers at this depth (the top-level value's is 1) are folded: checked and
    /// compacted whole, but kept on the tape as one node.
    private let foldDepth: Int
    /// The node of the folded container being read, or -1.
    private var folding = -1

    private static let noParent = UInt32.max

    package init(input: UnsafeRawPointer, count: Int, output: UnsafeMutablePointer<UInt8>, foldDepth: Int = 0) {
        self.input = input
        self.count = count
        self.output = output
        self.foldDepth = foldDepth
        // About one value per 16 bytes is generous for API responses; the tape grows
        // if a document is denser. A folded document keeps few nodes.
        nodes.reserveCapacity(foldDepth > 0 ? 64 : count / 16 + 16)
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
                if depth == foldDepth { folding = nodes.count }
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
        if folding >= 0, parent > folding {
            // A container inside a folded one: checked, and on the tape only while open
            // (it parks its parent there); its scalars never were.
            nodes.removeLast()
        } else {
            if parent == folding {
                nodes[parent].escaped = true
                folding = -1
            }
            nodes[parent].end = UInt32(truncatingIfNeeded: written)
            nodes[parent].next = UInt32(truncatingIfNeeded: nodes.count)
            nodes[parent].count = elements
        }
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
            // When compacting in place (`output` is `input`), a word is stored only when
            // all of it is taken: stored whole before the look, it could overwrite input
            // bytes not read yet.
            while position + 8 <= count {
                let word = input.loadUnaligned(fromByteOffset: position, as: UInt64.self)
                let special = Self.specialBytes(UInt64(littleEndian: word))
                guard special == 0 else {
                    let plain = special.trailingZeroBitCount >> 3
                    (output + written).update(from: (input + position).assumingMemoryBound(to: UInt8.self), count: plain)
                    position += plain
                    written += plain
                    break
                }
                UnsafeMutableRawPointer(output + written).storeBytes(of: word, as: UInt64.self)
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
        guard folding < 0 else { return }
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
