/// A path into a JSON value: a dot path (`data.list`, `user.id`, `images.*.url`; a lone
/// `.` is the value itself), or an RFC 6901 JSON Pointer (`/@odata.nextLink`,
/// `/a~1b/c`), for keys that hold dots, slashes or spaces.
///
/// A key segment looks up an object member; on an array, a key that is a decimal integer
/// indexes it (`data.list.0.id`), from the end when negative (`data.-1.id`: the last
/// element). `*` visits every element of an array or every member value of an object.
public struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    public enum Segment: Sendable, Hashable {
        case key(String)
        case wildcard
    }

    public let segments: [Segment]
    /// The text as given.
    public let description: String

    /// Nil for an empty text, an empty segment (`a..b`) or a leading or trailing dot
    /// other than the lone `.`, and for a pointer with a `~` not followed by 0 or 1.
    public init?(_ text: String) {
        description = text
        if text == "." {
            segments = []
            return
        }
        if text.hasPrefix("/") {
            var segments: [Segment] = []
            // A pointer names keys as they are: `*` is a key here, not a wildcard.
            for part in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
                guard let key = Self.unescapePointer(part) else { return nil }
                segments.append(.key(key))
            }
            self.segments = segments
            return
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard !text.isEmpty, !parts.contains(where: \.isEmpty) else { return nil }
        segments = parts.map { $0 == "*" ? .wildcard : .key(String($0)) }
    }

    /// A pointer segment: `~1` is `/`, `~0` is `~`; nil for any other `~`.
    private static func unescapePointer(_ part: Substring) -> String? {
        guard part.contains("~") else { return String(part) }
        var key = ""
        var tilde = false
        for character in part {
            if tilde {
                switch character {
                case "0": key.append("~")
                case "1": key.append("/")
                default: return nil
                }
                tilde = false
            } else if character == "~" {
                tilde = true
            } else {
                key.append(character)
            }
        }
        return tilde ? nil : key
    }
}

extension JSONValue {
    /// The first value the path leads to, in document order.
    public func value(at path: JSONPath) -> JSONValue? {
        var found: JSONValue?
        _ = visit(path.segments[...]) { match in
            found = match
            return false
        }
        return found
    }

    /// Every value the path leads to, in document order.
    public func values(at path: JSONPath) -> [JSONValue] {
        var found: [JSONValue] = []
        _ = visit(path.segments[...]) { match in
            found.append(match)
            return true
        }
        return found
    }

    /// Calls `body` with every value that `segments` lead to from this one, while it
    /// returns true. Returns false if stopped. A folded container on the way is parsed
    /// again (`unfolded`), so a path reads a folded document as it reads any other.
    func visit(_ segments: ArraySlice<JSONPath.Segment>, _ body: (JSONValue) -> Bool) -> Bool {
        var value = self
        var rest = segments
        // Keys lead to at most one value each: follow them without recursion.
        while let segment = rest.first {
            guard case let .key(key) = segment else { break }
            guard let child = value.child(key) else { return true }
            value = child
            rest = rest.dropFirst()
        }
        guard !rest.isEmpty else { return body(value) }
        let after = rest.dropFirst()
        let open = value.unfolded
        return open.document.forEachChild(of: open.index) { child in
            JSONValue(document: open.document, index: child).visit(after, body)
        }
    }
}

extension JSONValue {
    /// The member `key` of an object, or the element at index `key` of an array. One
    /// element of a folded array is found in its text and parsed alone, not the array.
    func child(_ key: String) -> JSONValue? {
        if isFolded, kind == .array, let position = JSONDocument.arrayIndex(key) {
            let wanted = position < 0 ? count + position : position
            guard wanted >= 0, wanted < count else { return nil }
            let range = byteRange
            var element: Range<Int>?
            var index = 0
            document.bytes.withUnsafeBufferPointer { all in
                JSONText.forEachElement(of: UnsafeBufferPointer(rebasing: all[range])) { local in
                    if index == wanted { element = range.lowerBound + local.lowerBound ..< range.lowerBound + local.upperBound }
                    index += 1
                    return element == nil
                }
            }
            guard let element else { return nil }
            return document.bytes.withUnsafeBytes { all in
                (try? JSONDocument(parsing: UnsafeRawBufferPointer(rebasing: all[element])))?.root
            }
        }
        let open = unfolded
        return open.document.child(of: open.index, key: key).map { JSONValue(document: open.document, index: $0) }
    }
}

extension JSONDocument {
    /// The member `key` of an object, or the element at index `key` of an array.
    func child(of node: Int, key: String) -> Int? {
        switch nodes[node].kind {
        case .object:
            return member(of: node, named: key)
        case .array:
            guard let position = Self.arrayIndex(key) else { return nil }
            return element(of: node, at: position < 0 ? Int(nodes[node].count) + position : position)
        case .string, .number, .bool, .null:
            return nil
        }
    }

    /// `key` as an array index if it is all decimal digits, or a minus and digits (from
    /// the end; not `-0`), and not absurdly long.
    static func arrayIndex(_ key: String) -> Int? {
        let negative = key.hasPrefix("-")
        let digits = negative ? key.utf8.dropFirst() : key.utf8[...]
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value = 0
        for byte in digits {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value * 10 + Int(digit)
        }
        guard negative else { return value }
        return value == 0 ? nil : -value
    }
}
