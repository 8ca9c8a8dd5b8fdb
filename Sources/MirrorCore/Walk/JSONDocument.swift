import Foundation

/// The kind of a JSON value.
public enum JSONKind: Sendable, Equatable, CustomStringConvertible {
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

/// Why a response is not JSON, with the byte offset in the original input.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public let offset: Int
    public let message: String
    public var description: String { message }
}

/// A strictly validated JSON document, kept as its compacted text (whitespace outside
/// strings removed, everything else byte for byte: numbers keep every digit) plus a flat
/// tape of nodes pointing into that text. One pass, two allocations.
public struct JSONDocument: Sendable {
    /// One value on the tape. Containers are followed by their children; `next` is the
    /// index just past the subtree, so siblings are one step apart.
    struct Node: Sendable {
        var kind: JSONKind
        /// For strings: an escape occurs inside, so the raw bytes are not the text.
        var escaped: Bool
        var start: Int32
        var end: Int32
        var next: Int32
        var count: Int32
    }

    public let bytes: [UInt8]
    let nodes: [Node]

    public static let maximumDepth = 512

    public init(parsing input: [UInt8]) throws(JSONSyntaxError) {
        let result: Result<JSONDocument, JSONSyntaxError> = input.withUnsafeBytes { raw in
            do throws(JSONSyntaxError) { return .success(try JSONDocument(parsing: raw)) } catch { return .failure(error) }
        }
        self = try result.get()
    }

    public init(parsing input: UnsafeRawBufferPointer) throws(JSONSyntaxError) {
        var parser = JSONParser(input: input.bindMemory(to: UInt8.self))
        try parser.parseDocument()
        bytes = parser.out
        nodes = parser.nodes
    }

    public var root: JSONValue { JSONValue(document: self, index: 0) }
}

/// A handle on one value of a document.
public struct JSONValue: Sendable {
    let document: JSONDocument
    let index: Int

    private var node: JSONDocument.Node { document.nodes[index] }

    public var kind: JSONKind { node.kind }

    public var byteRange: Range<Int> { Int(node.start)..<Int(node.end) }

    public var rawBytes: ArraySlice<UInt8> { document.bytes[byteRange] }

    public var rawText: String { String(decoding: rawBytes, as: UTF8.self) }

    /// Elements of an array, members of an object; 0 for scalars.
    public var count: Int { Int(node.count) }

    public var elements: [JSONValue] {
        guard node.kind == .array else { return [] }
        var result: [JSONValue] = []
        result.reserveCapacity(count)
        var child = index + 1
        for _ in 0..<count {
            result.append(JSONValue(document: document, index: child))
            child = Int(document.nodes[child].next)
        }
        return result
    }

    public var members: [(key: String, value: JSONValue)] {
        guard node.kind == .object else { return [] }
        var result: [(key: String, value: JSONValue)] = []
        result.reserveCapacity(count)
        var child = index + 1
        for _ in 0..<count {
            let key = JSONValue(document: document, index: child).stringValue ?? ""
            result.append((key, JSONValue(document: document, index: child + 1)))
            child = Int(document.nodes[child + 1].next)
        }
        return result
    }

    /// Object member lookup; the last of duplicate keys wins.
    public subscript(key: String) -> JSONValue? {
        guard node.kind == .object else { return nil }
        var found: JSONValue?
        var key = key
        key.withUTF8 { wanted in
            document.bytes.withUnsafeBufferPointer { bytes in
                var child = index + 1
                for _ in 0..<count {
                    let keyNode = document.nodes[child]
                    let matches: Bool
                    if keyNode.escaped {
                        matches = JSONValue(document: document, index: child).stringValue.map { $0.utf8.elementsEqual(wanted) } ?? false
                    } else {
                        let start = Int(keyNode.start) + 1, end = Int(keyNode.end) - 1
                        matches = end - start == wanted.count
                            && (wanted.isEmpty || memcmp(bytes.baseAddress! + start, wanted.baseAddress!, wanted.count) == 0)
                    }
                    if matches { found = JSONValue(document: document, index: child + 1) }
                    child = Int(document.nodes[child + 1].next)
                }
            }
        }
        return found
    }

    /// Unescaped string content; nil for other kinds.
    public var stringValue: String? {
        guard node.kind == .string else { return nil }
        let inner = Int(node.start) + 1..<Int(node.end) - 1
        if !node.escaped { return String(decoding: document.bytes[inner], as: UTF8.self) }
        return JSONText.unescape(document.bytes[inner])
    }

    /// A string's text, a number as written, `true`/`false`; nil for null and containers.
    public var scalarText: String? {
        switch node.kind {
        case .string: return stringValue
        case .number, .bool: return rawText
        case .null, .object, .array: return nil
        }
    }

    public var boolValue: Bool? {
        node.kind == .bool ? document.bytes[Int(node.start)] == UInt8(ascii: "t") : nil
    }

    /// A number that is an integer fitting `Int`.
    public var intValue: Int? {
        guard node.kind == .number else { return nil }
        return Int(rawText)
    }

    public func value(at path: JSONPath) -> JSONValue? {
        values(at: path, from: 0, firstOnly: true).first
    }

    public func values(at path: JSONPath) -> [JSONValue] {
        values(at: path, from: 0, firstOnly: false)
    }

    private func values(at path: JSONPath, from segment: Int, firstOnly: Bool) -> [JSONValue] {
        if segment == path.segments.count { return [self] }
        var children: [JSONValue]
        switch path.segments[segment] {
        case .wildcard:
            switch kind {
            case .array: children = elements
            case .object: children = members.map(\.value)
            default: children = []
            }
        case let .key(key):
            if kind == .array {
                guard let position = Int(key), position >= 0, position < count else { return [] }
                children = [elements[position]]
            } else {
                children = self[key].map { [$0] } ?? []
            }
        }
        var result: [JSONValue] = []
        for child in children {
            result += child.values(at: path, from: segment + 1, firstOnly: firstOnly)
            if firstOnly, !result.isEmpty { break }
        }
        return result
    }
}

/// The one-pass validating, compacting parser.
struct JSONParser {
    let input: UnsafeBufferPointer<UInt8>
    var position = 0
    var out: [UInt8] = []
    var nodes: [JSONDocument.Node] = []
    var depth = 0

    init(input: UnsafeBufferPointer<UInt8>) {
        self.input = input
        out.reserveCapacity(input.count)
        nodes.reserveCapacity(input.count / 8 + 4)
    }

    mutating func parseDocument() throws(JSONSyntaxError) {
        try parseValue()
        skipWhitespace()
        if position < input.count {
            throw JSONSyntaxError(offset: position, message: "extra data after the JSON value at byte \(position)")
        }
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while position < input.count {
            let byte = input[position]
            guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
            position += 1
        }
    }

    func unexpected() -> JSONSyntaxError {
        guard position < input.count else { return JSONSyntaxError(offset: position, message: "unexpected end of input") }
        let byte = input[position]
        let shown = byte >= 0x20 && byte < 0x7F ? String(UnicodeScalar(byte)) : String(format: "\\x%02X", byte)
        return JSONSyntaxError(offset: position, message: "unexpected character '\(shown)' at byte \(position)")
    }

    mutating func parseValue() throws(JSONSyntaxError) {
        skipWhitespace()
        guard position < input.count else { throw unexpected() }
        switch input[position] {
        case UInt8(ascii: "{"): try parseContainer(object: true)
        case UInt8(ascii: "["): try parseContainer(object: false)
        case UInt8(ascii: "\""): try parseString()
        case UInt8(ascii: "t"): try parseLiteral("true", kind: .bool)
        case UInt8(ascii: "f"): try parseLiteral("false", kind: .bool)
        case UInt8(ascii: "n"): try parseLiteral("null", kind: .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber()
        default: throw unexpected()
        }
    }

    mutating func parseContainer(object: Bool) throws(JSONSyntaxError) {
        depth += 1
        if depth > JSONDocument.maximumDepth {
            throw JSONSyntaxError(offset: position, message: "nesting deeper than \(JSONDocument.maximumDepth) levels")
        }
        let close = object ? UInt8(ascii: "}") : UInt8(ascii: "]")
        let index = nodes.count
        nodes.append(.init(kind: object ? .object : .array, escaped: false, start: Int32(out.count), end: 0, next: 0, count: 0))
        out.append(input[position])
        position += 1
        skipWhitespace()
        var count: Int32 = 0
        if position < input.count, input[position] == close {
            position += 1
        } else {
            while true {
                if object {
                    skipWhitespace()
                    guard position < input.count, input[position] == UInt8(ascii: "\"") else { throw unexpected() }
                    try parseString()
                    skipWhitespace()
                    guard position < input.count, input[position] == UInt8(ascii: ":") else { throw unexpected() }
                    out.append(UInt8(ascii: ":"))
                    position += 1
                }
                try parseValue()
                count += 1
                skipWhitespace()
                guard position < input.count else { throw unexpected() }
                let byte = input[position]
                position += 1
                if byte == UInt8(ascii: ",") {
                    out.append(byte)
                } else if byte == close {
                    break
                } else {
                    position -= 1
                    throw unexpected()
                }
            }
        }
        out.append(close)
        nodes[index].end = Int32(out.count)
        nodes[index].next = Int32(nodes.count)
        nodes[index].count = count
        depth -= 1
    }

    mutating func parseLiteral(_ literal: StaticString, kind: JSONKind) throws(JSONSyntaxError) {
        let start = out.count
        let text = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        for byte in text {
            guard position < input.count, input[position] == byte else { throw unexpected() }
            position += 1
        }
        out.append(contentsOf: text)
        appendScalar(kind, start: start)
    }

    @inline(__always)
    mutating func appendScalar(_ kind: JSONKind, start: Int, escaped: Bool = false) {
        nodes.append(.init(kind: kind, escaped: escaped, start: Int32(start), end: Int32(out.count),
                           next: Int32(nodes.count + 1), count: 0))
    }

    mutating func parseNumber() throws(JSONSyntaxError) {
        let begin = position
        func digits(_ parser: inout JSONParser) -> Int {
            let from = parser.position
            while parser.position < parser.input.count,
                  parser.input[parser.position] >= UInt8(ascii: "0"), parser.input[parser.position] <= UInt8(ascii: "9") {
                parser.position += 1
            }
            return parser.position - from
        }
        if input[position] == UInt8(ascii: "-") { position += 1 }
        guard position < input.count else { throw unexpected() }
        if input[position] == UInt8(ascii: "0") {
            position += 1
        } else if digits(&self) == 0 {
            throw unexpected()
        }
        if position < input.count, input[position] == UInt8(ascii: ".") {
            position += 1
            if digits(&self) == 0 { throw unexpected() }
        }
        if position < input.count, input[position] == UInt8(ascii: "e") || input[position] == UInt8(ascii: "E") {
            position += 1
            if position < input.count, input[position] == UInt8(ascii: "+") || input[position] == UInt8(ascii: "-") {
                position += 1
            }
            if digits(&self) == 0 { throw unexpected() }
        }
        let start = out.count
        out.append(contentsOf: UnsafeBufferPointer(rebasing: input[begin..<position]))
        appendScalar(.number, start: start)
    }

    mutating func parseString() throws(JSONSyntaxError) {
        let start = out.count
        var escaped = false
        position += 1
        let contentStart = position
        while true {
            // Skip plain ASCII quickly; the whole raw content is copied at the closing quote.
            while position < input.count {
                let byte = input[position]
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
                position += 1
            }
            guard position < input.count else { throw unexpected() }
            let byte = input[position]
            if byte == UInt8(ascii: "\"") {
                out.append(UInt8(ascii: "\""))
                out.append(contentsOf: UnsafeBufferPointer(rebasing: input[contentStart..<position]))
                out.append(UInt8(ascii: "\""))
                position += 1
                break
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
                guard position + 1 < input.count else { position = input.count; throw unexpected() }
                let code = input[position + 1]
                switch code {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    position += 2
                case UInt8(ascii: "u"):
                    for offset in 2...5 {
                        guard position + offset < input.count else { position = input.count; throw unexpected() }
                        guard Self.hexValue(input[position + offset]) != nil else {
                            throw JSONSyntaxError(offset: position, message: "invalid escape '\\u' at byte \(position)")
                        }
                    }
                    position += 6
                default:
                    let shown = code >= 0x20 && code < 0x7F ? String(UnicodeScalar(code)) : "?"
                    throw JSONSyntaxError(offset: position, message: "invalid escape '\\\(shown)' at byte \(position)")
                }
            } else if byte < 0x20 {
                throw JSONSyntaxError(offset: position, message: "control character in string at byte \(position)")
            } else {
                let length = Self.utf8SequenceLength(input, at: position)
                guard length > 0 else {
                    throw JSONSyntaxError(offset: position, message: "invalid UTF-8 at byte \(position)")
                }
                position += length
            }
        }
        appendScalar(.string, start: start, escaped: escaped)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The length of a well-formed UTF-8 sequence at `index` (no overlongs, no surrogates,
    /// nothing above U+10FFFF), or 0.
    static func utf8SequenceLength(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int {
        let first = bytes[index]
        func continuation(_ offset: Int, _ low: UInt8 = 0x80, _ high: UInt8 = 0xBF) -> Bool {
            index + offset < bytes.count && bytes[index + offset] >= low && bytes[index + offset] <= high
        }
        switch first {
        case 0xC2...0xDF: return continuation(1) ? 2 : 0
        case 0xE0: return continuation(1, 0xA0) && continuation(2) ? 3 : 0
        case 0xE1...0xEC, 0xEE...0xEF: return continuation(1) && continuation(2) ? 3 : 0
        case 0xED: return continuation(1, 0x80, 0x9F) && continuation(2) ? 3 : 0
        case 0xF0: return continuation(1, 0x90) && continuation(2) && continuation(3) ? 4 : 0
        case 0xF1...0xF3: return continuation(1) && continuation(2) && continuation(3) ? 4 : 0
        case 0xF4: return continuation(1, 0x80, 0x8F) && continuation(2) && continuation(3) ? 4 : 0
        default: return 0
        }
    }
}
