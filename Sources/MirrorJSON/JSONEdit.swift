/// Writing a JSON value again with some of its values taken out or replaced, and in one
/// canonical form: what `drop:` and `hash:` make of a record before it is stored.

extension JSONValue {
    /// Appends this value's compacted text to `out`, without the values `drop` paths lead
    /// to (an object member with its key; an array element, the elements after it moving
    /// up) and with the values `replace` paths lead to written as `replacement` gives
    /// them. A key a path names matches every member of that name, duplicates too; a
    /// path that leads nowhere changes nothing. A path of no segments (`.`) is ignored:
    /// the value itself is always written.
    package func appendEdited(dropping drop: [JSONPath], replacing replace: [JSONPath],
                              with replacement: (JSONValue) -> [UInt8], to out: inout [UInt8]) {
        let rules = (drop.map { EditRule(rest: $0.segments[...], drop: true) }
            + replace.map { EditRule(rest: $0.segments[...], drop: false) }).filter { !$0.rest.isEmpty }
        _ = appendEdited(rules, replacement: replacement, to: &out)
    }

    private struct EditRule {
        var rest: ArraySlice<JSONPath.Segment>
        var drop: Bool
    }

    /// Appends this value as `rules` (the rest of each path that reached it) make it;
    /// false when one drops it, and nothing was appended.
    private func appendEdited(_ rules: [EditRule], replacement: (JSONValue) -> [UInt8], to out: inout [UInt8]) -> Bool {
        if rules.contains(where: { $0.rest.isEmpty && $0.drop }) { return false }
        if rules.contains(where: { $0.rest.isEmpty }) {
            out += replacement(self)
            return true
        }
        let open = unfolded
        guard !rules.isEmpty, open.kind == .object || open.kind == .array else {
            out += rawBytes
            return true
        }
        let isObject = open.kind == .object
        let count = open.count
        out.append(isObject ? UInt8(ascii: "{") : UInt8(ascii: "["))
        var first = true
        var position = 0
        _ = open.document.forEachChild(of: open.index) { child in
            defer { position += 1 }
            let value = JSONValue(document: open.document, index: child)
            let key = isObject ? JSONValue(document: open.document, index: child - 1) : nil
            var reaching: [EditRule] = []
            for rule in rules where Self.segment(rule.rest[rule.rest.startIndex], matches: value, key: key,
                                                 position: position, count: count) {
                reaching.append(EditRule(rest: rule.rest.dropFirst(), drop: rule.drop))
            }
            let mark = out.count
            if !first { out.append(UInt8(ascii: ",")) }
            if let key {
                out += key.rawBytes
                out.append(UInt8(ascii: ":"))
            }
            if reaching.isEmpty {
                out += value.rawBytes
                first = false
            } else if value.appendEdited(reaching, replacement: replacement, to: &out) {
                first = false
            } else {
                out.removeSubrange(mark...)
            }
            return true
        }
        out.append(isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
        return true
    }

    /// Whether `segment` leads from a container to its child `value`: a member (whose
    /// name is `key`) or the element at `position` of `count`; as `visit` follows paths.
    private static func segment(_ segment: JSONPath.Segment, matches value: JSONValue, key: JSONValue?,
                                position: Int, count: Int) -> Bool {
        switch segment {
        case .wildcard:
            return true
        case let .key(name):
            if let key { return key.stringValue == name }
            guard let index = JSONDocument.arrayIndex(name) else { return false }
            return index < 0 ? count + index == position : index == position
        case let .filter(filter):
            if let key { return filter.orKey != nil && key.stringValue == filter.orKey }
            return value[filter.key]?.scalarText == filter.value
        }
    }

    /// Appends this value in one canonical form: compacted, every string (and key)
    /// written with only the escapes JSON requires (`\"`, `\\` and control characters,
    /// see `JSONText.appendQuoted`), other characters as their UTF-8; numbers as written,
    /// members in their order. Two texts of one value that differ only in escapes
    /// (`"a\u0040b"`, `"a@b"`) give the same bytes.
    package func appendCanonical(to out: inout [UInt8]) {
        let open = unfolded
        switch open.kind {
        case .string:
            if open.isEscaped { JSONText.appendQuoted(open.stringValue ?? "", to: &out) } else { out += open.rawBytes }
        case .number, .bool, .null:
            out += open.rawBytes
        case .object, .array:
            let isObject = open.kind == .object
            out.append(isObject ? UInt8(ascii: "{") : UInt8(ascii: "["))
            var first = true
            _ = open.document.forEachChild(of: open.index) { child in
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                if isObject {
                    JSONValue(document: open.document, index: child - 1).appendCanonical(to: &out)
                    out.append(UInt8(ascii: ":"))
                }
                JSONValue(document: open.document, index: child).appendCanonical(to: &out)
                return true
            }
            out.append(isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
        }
    }
}

extension JSONPath {
    /// Whether a value `other` leads to may be one this path leads to, or lie inside one:
    /// this path is as long as `other` or shorter, and each of its segments may be the
    /// one of `other` at its place. A wildcard or a filter may be any segment, and two
    /// array indexes may be one element (`-1` is the last); so the answer errs towards
    /// yes.
    package func mayReach(_ other: JSONPath) -> Bool {
        guard segments.count <= other.segments.count else { return false }
        return zip(segments, other.segments).allSatisfy { mine, theirs in
            switch (mine, theirs) {
            case (.wildcard, _), (_, .wildcard), (.filter, _), (_, .filter): return true
            case let (.key(a), .key(b)):
                return a == b || (JSONDocument.arrayIndex(a) != nil && JSONDocument.arrayIndex(b) != nil)
            }
        }
    }
}
