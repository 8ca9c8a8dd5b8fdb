/// Writing and reading the text of JSON strings and numbers.

package enum JSONText {
    /// `s` as a JSON string, quotes included (see `appendQuoted(_:to:)`).
    package static func quoted(_ s: String) -> String {
        var bytes: [UInt8] = []
        appendQuoted(s, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `s` as a quoted JSON string: `"`, `\` and control characters escaped (as
    /// `\n`, `\t`, `\r`, `\b`, `\f` or `\u00XX`), everything else, non-ASCII included,
    /// as its UTF-8.
    package static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        appendQuoted(s.utf8, to: &out)
    }

    /// Appends UTF-8 text as a quoted JSON string (see `appendQuoted(_:to:)`).
    package static func appendQuoted<Text: Collection<UInt8>>(_ text: Text, to out: inout [UInt8]) {
        // Called from other modules, this generic is not specialized there: read the bytes
        // in place where they are contiguous (arrays, slices, native strings), so the loop
        // below runs on a plain buffer rather than through a generic iterator.
        if text.withContiguousStorageIfAvailable({ appendQuoted(contiguous: $0, to: &out) }) != nil { return }
        Array(text).withUnsafeBufferPointer { appendQuoted(contiguous: $0, to: &out) }
    }

    /// The bytes between two that need an escape are copied as one run. `out` grows as
    /// appends grow it (doubling): a `reserveCapacity` for each string would reallocate to
    /// the exact size every time `out` is full.
    private static func appendQuoted(contiguous text: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var run = 0
        for index in 0 ..< text.count {
            let byte = text[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            if run < index { out.append(contentsOf: UnsafeBufferPointer(rebasing: text[run ..< index])) }
            run = index + 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(byte)
            case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
            case 0x08: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "f"))
            default:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        hexDigit(byte >> 4), hexDigit(byte & 0xF)])
            }
        }
        if run < text.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: text[run...])) }
        out.append(UInt8(ascii: "\""))
    }

    /// Calls `body` with the range of each element of `array`, the compacted text of a
    /// checked JSON array (no whitespace outside strings), in order, while it returns true.
    package static func forEachElement(of array: UnsafeBufferPointer<UInt8>, _ body: (Range<Int>) -> Bool) {
        var index = 1
        guard array.count > 2 else { return }
        var start = index
        var depth = 0
        while true {
            switch array[index] {
            case UInt8(ascii: "\""):
                index = closingQuote(in: array, opening: index)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if depth == 0 {
                    _ = body(start ..< index)
                    return
                }
                depth -= 1
            case UInt8(ascii: ",") where depth == 0:
                guard body(start ..< index) else { return }
                start = index + 1
            default:
                break
            }
            index += 1
        }
    }

    /// The index of the quote that closes the string whose opening quote is at `open`,
    /// in checked JSON text: eight bytes at a time while none of them is a quote or a
    /// backslash (string content is most of a page's bytes).
    @inline(__always)
    static func closingQuote(in text: UnsafeBufferPointer<UInt8>, opening open: Int) -> Int {
        let base = UnsafeRawPointer(text.baseAddress!)
        let ones: UInt64 = 0x0101_0101_0101_0101
        var index = open + 1
        while true {
            while index + 8 <= text.count {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
                // The lowest flag is exact: borrows only run upwards.
                let found = (((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)) & (ones &* 0x80)
                if found != 0 {
                    index += found.trailingZeroBitCount >> 3
                    break
                }
                index += 8
            }
            let byte = text[index]
            if byte == UInt8(ascii: "\"") { return index }
            index += byte == UInt8(ascii: "\\") ? 2 : 1
        }
    }

    /// What `member(_:in:)` found.
    package enum Member: Equatable {
        /// The value's bytes, within the object's.
        case value(Range<Int>)
        case missing
        /// A key before it is written with escapes: only a parse can tell.
        case unsure
    }

    /// The first member named `key` of `object`, the compacted text of a checked JSON
    /// object, found in its text without parsing it (the first of duplicate keys counts,
    /// as SQLite reads it).
    package static func member(_ key: UnsafeBufferPointer<UInt8>, in object: UnsafeBufferPointer<UInt8>) -> Member {
        var found = Member.missing
        forEachMember(of: object) { name, escaped, value in
            if escaped {
                found = .unsure
                return false
            }
            guard name.count == key.count, equal(name.baseAddress!, key.baseAddress, key.count) else { return true }
            found = .value(value)
            return false
        }
        return found
    }

    /// Calls `body` with each member of `object`, the compacted text of a checked JSON
    /// object, in order, while it returns true: the key's text between its quotes (as
    /// written: `escaped` says it holds a backslash) and the value's bytes within `object`.
    package static func forEachMember(
        of object: UnsafeBufferPointer<UInt8>,
        _ body: (_ key: UnsafeBufferPointer<UInt8>, _ escaped: Bool, _ value: Range<Int>) -> Bool
    ) {
        guard object.count > 2 else { return }
        var index = 1
        while true {
            // A key: `"…"` then `:`.
            let keyStart = index + 1
            index = closingQuote(in: object, opening: index)
            let keyEnd = index
            let escaped = UnsafeBufferPointer(rebasing: object[keyStart ..< keyEnd]).contains(UInt8(ascii: "\\"))
            index += 2
            // The value: up to the `,` or `}` that ends it.
            let valueStart = index
            var depth = 0
            while true {
                let byte = object[index]
                if byte == UInt8(ascii: "\"") {
                    index = closingQuote(in: object, opening: index)
                } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                    depth += 1
                } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                    if depth == 0 { break }
                    depth -= 1
                } else if byte == UInt8(ascii: ","), depth == 0 {
                    break
                }
                index += 1
            }
            guard body(UnsafeBufferPointer(rebasing: object[keyStart ..< keyEnd]), escaped, valueStart ..< index),
                  object[index] != UInt8(ascii: "}") else { return }
            index += 1
        }
    }

    /// Decodes the content (between the quotes) of a string the parser has checked. A
    /// `\u` escape of an unpaired surrogate becomes U+FFFD.
    package static func unescape(_ raw: UnsafeBufferPointer<UInt8>) -> String {
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
    package static func integer(_ literal: UnsafeBufferPointer<UInt8>) -> Int? {
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
