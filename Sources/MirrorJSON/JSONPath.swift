/// A path into a JSON value: a dot path (`data.list`, `user.id`, `images.*.url`; a lone
/// `.` is the value itself), or an RFC 6901 JSON Pointer (`/@odata.nextLink`,
/// `/a~1b/c`), for keys that hold dots, slashes or spaces.
///
/// A key segment looks up an object member; on an array, a key that is a decimal integer
/// indexes it (`data.list.0.id`), from the end when negative (`data.-1.id`: the last
/// element). `*` visits every element of an array or every member value of an object.
/// A filter `[key=value]` visits the elements of an array that are objects whose member
/// `key` is `value` (a string's text, a number as written, `true`, `false`):
/// `links[rel=next].href`, `[rel=next].href` on a top-level array, and in a pointer the
/// segment `/links/[rel=next]/href` (on an object, that segment stays a key). In a dot
/// path, a filter on an object reads it as an array of one: the object itself when its
/// member matches (an XML feed's lone `<link>`).

package struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    package enum Segment: Sendable, Hashable {
        case key(String)
        case wildcard
        case filter(Filter)
    }

    /// `[key=value]`: the elements of an array whose member `key` is `value`.
    package struct Filter: Sendable, Hashable {
        package let key: String
        package let value: String
        /// In a pointer, the segment's text: the member it names on an object.
        package let orKey: String?
    }

    package let segments: [Segment]
    /// The text as given.
    package let description: String

    /// A path of `segments`, shown as `description`.
    package init(segments: [Segment], description: String) {
        self.segments = segments
        self.description = description
    }

    /// Nil for an empty text, an empty segment (`a..b`) or a leading or trailing dot
    /// other than the lone `.`, a filter that is not `[key=value]` or is not closed, and
    /// for a pointer with a `~` not followed by 0 or 1.
    package init?(_ text: String) {
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
                if key.hasPrefix("["), key.hasSuffix("]"), let filter = Self.filter(key.dropFirst().dropLast(), orKey: key) {
                    segments.append(.filter(filter))
                } else {
                    segments.append(.key(key))
                }
            }
            self.segments = segments
            return
        }
        guard let segments = Self.dotSegments(text) else { return nil }
        self.segments = segments
    }

    /// A dot path's segments: keys split at dots outside brackets, each key followed by
    /// any number of filters (a filter may stand alone: `[rel=next]`); `*` alone is the
    /// wildcard.
    private static func dotSegments(_ text: String) -> [Segment]? {
        guard !text.isEmpty else { return nil }
        var segments: [Segment] = []
        var rest = Substring(text)
        while true {
            // The key: up to a dot or a bracket.
            let keyEnd = rest.firstIndex { $0 == "." || $0 == "[" } ?? rest.endIndex
            let key = rest[..<keyEnd]
            rest = rest[keyEnd...]
            var filters: [Segment] = []
            while rest.first == "[" {
                guard let close = closingBracket(rest),
                      let filter = filter(rest[rest.index(after: rest.startIndex)..<close], orKey: nil) else { return nil }
                filters.append(.filter(filter))
                rest = rest[rest.index(after: close)...]
            }
            if key.isEmpty {
                guard !filters.isEmpty else { return nil }
            } else {
                segments.append(key == "*" ? .wildcard : .key(String(key)))
            }
            segments += filters
            if rest.isEmpty { return segments }
            // After a key or a filter comes a dot, and another segment after it.
            guard rest.first == ".", rest.count > 1 else { return nil }
            rest = rest.dropFirst()
        }
    }

    /// The `]` that closes the filter `text` opens; a value in quotes may hold `]` and `.`.
    private static func closingBracket(_ text: Substring) -> Substring.Index? {
        var quote: Character?
        for index in text.indices.dropFirst() {
            let character = text[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" {
                quote = character
            } else if character == "]" {
                return index
            }
        }
        return nil
    }

    /// `key=value` or `key="value"` (or single quotes); nil without a key or an `=`.
    private static func filter(_ text: Substring, orKey: String?) -> Filter? {
        guard let equals = text.firstIndex(of: "=") else { return nil }
        let key = text[..<equals]
        var value = text[text.index(after: equals)...]
        guard !key.isEmpty, !key.contains("["), !key.contains("]") else { return nil }
        if let quote = value.first, quote == "'" || quote == "\"" {
            guard value.count >= 2, value.last == quote else { return nil }
            value = value.dropFirst().dropLast()
            guard !value.contains(quote) else { return nil }
        } else if value.contains("]") || value.contains("'") || value.contains("\"") {
            return nil
        }
        return Filter(key: String(key), value: String(value), orKey: orKey)
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
    package func value(at path: JSONPath) -> JSONValue? {
        var found: JSONValue?
        _ = visit(path.segments[...]) { match in
            found = match
            return false
        }
        return found
    }

    /// Every value the path leads to, in document order.
    package func values(at path: JSONPath) -> [JSONValue] {
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
    package func visit(_ segments: ArraySlice<JSONPath.Segment>, _ body: (JSONValue) -> Bool) -> Bool {
        var value = self
        var rest = segments
        // Keys lead to at most one value each: follow them without recursion.
        while let segment = rest.first {
            guard case let .key(key) = segment else { break }
            guard let child = value.child(key) else { return true }
            value = child
            rest = rest.dropFirst()
        }
        guard let segment = rest.first else { return body(value) }
        let after = rest.dropFirst()
        let open = value.unfolded
        guard case let .filter(filter) = segment else {
            return open.document.forEachChild(of: open.index) { child in
                JSONValue(document: open.document, index: child).visit(after, body)
            }
        }
        guard open.kind == .array else {
            // A pointer's `[…]` segment on an object is the member of that name.
            if let key = filter.orKey {
                guard let child = open[key] else { return true }
                return child.visit(after, body)
            }
            // In a dot path, an object is read as an array of one (XML's lone element).
            guard open.kind == .object, open[filter.key]?.scalarText == filter.value else { return true }
            return open.visit(after, body)
        }
        return open.document.forEachChild(of: open.index) { child in
            let element = JSONValue(document: open.document, index: child)
            guard element[filter.key]?.scalarText == filter.value else { return true }
            return element.visit(after, body)
        }
    }
}

extension JSONValue {
    /// The member `key` of an object, or the element at index `key` of an array. One
    /// element of a folded array is found in its text and parsed alone, not the array.
    package func child(_ key: String) -> JSONValue? {
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
    package func child(of node: Int, key: String) -> Int? {
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
