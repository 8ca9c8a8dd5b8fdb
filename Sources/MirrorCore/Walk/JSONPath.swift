/// A dot path into a JSON value: `data.list`, `user.id`, `images.*.url`; `.` is the value
/// itself. A number segment indexes an array.
public struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    public enum Segment: Sendable, Hashable {
        case key(String)
        case wildcard
    }

    public let segments: [Segment]
    public let description: String

    public init?(_ text: String) {
        description = text
        if text == "." {
            segments = []
            return
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard !text.isEmpty, !parts.contains(where: \.isEmpty) else { return nil }
        segments = parts.map { $0 == "*" ? .wildcard : .key(String($0)) }
    }
}

/// Writing and reading JSON string literals.
public enum JSONText {
    /// Appends `s` as a quoted JSON string: `"` `\` and control characters escaped,
    /// everything else (non-ASCII included) as UTF-8.
    public static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x08: out.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Decodes the content of a validated JSON string (without its quotes). A lone
    /// surrogate becomes U+FFFD.
    static func unescape(_ raw: ArraySlice<UInt8>) -> String {
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        var index = raw.startIndex
        func flush() {
            if !utf8.isEmpty {
                scalars.append(contentsOf: String(decoding: utf8, as: UTF8.self).unicodeScalars)
                utf8.removeAll(keepingCapacity: true)
            }
        }
        func hex4(_ at: Int) -> UInt32? {
            guard at + 4 <= raw.endIndex else { return nil }
            var value: UInt32 = 0
            for offset in 0..<4 {
                guard let digit = JSONParser.hexValue(raw[at + offset]) else { return nil }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
        while index < raw.endIndex {
            let byte = raw[index]
            guard byte == UInt8(ascii: "\\"), index + 1 < raw.endIndex else {
                utf8.append(byte)
                index += 1
                continue
            }
            flush()
            let code = raw[index + 1]
            index += 2
            switch code {
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                guard let unit = hex4(index) else { scalars.append("\u{FFFD}"); continue }
                index += 4
                if (0xD800...0xDBFF).contains(unit), index + 6 <= raw.endIndex,
                   raw[index] == UInt8(ascii: "\\"), raw[index + 1] == UInt8(ascii: "u"),
                   let low = hex4(index + 2), (0xDC00...0xDFFF).contains(low) {
                    index += 6
                    let value = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    scalars.append(Unicode.Scalar(value) ?? "\u{FFFD}")
                } else {
                    scalars.append(Unicode.Scalar(unit) ?? "\u{FFFD}")
                }
            default: scalars.append(Unicode.Scalar(code))
            }
        }
        flush()
        return String(scalars)
    }
}
