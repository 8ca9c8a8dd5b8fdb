import MirrorJSON

/// An XML body read strictly and written as JSON: elements, attributes in single or double
/// quotes, text and CDATA; comments, processing instructions and the XML declaration are
/// skipped. The five predefined entities and character references (`&#38;`, `&#x26;`) are
/// decoded and no other: a DOCTYPE is refused, so no entity is ever declared, expanded or
/// fetched (neither a billion laughs nor an external entity), and any other `&name;` is an
/// error. Names are kept as written, prefixes included (`atom:link`).
///
/// Written here rather than taken from a package: Foundation's `XMLParser` on Linux (and
/// SWXMLHash and XMLCoder above it) hands the body to libxml2 with entity substitution on,
/// and would link libxml2 into the binary.
struct XMLTree {
    /// Why a body is not XML this reads.
    struct Problem: Error, Equatable {
        let message: String
    }

    /// One element: its name, attributes in document order, child elements and text pieces.
    struct Element {
        var name: String
        var attributes: [(name: String, value: String)] = []
        var children: [Element] = []
        /// Text and CDATA in document order; `blank` when only whitespace.
        var texts: [(text: String, blank: Bool)] = []
        /// Where its start tag opened, for messages.
        var offset: Int
    }

    /// How deep elements may nest: deeper bodies fail rather than exhaust the stack.
    static let depthLimit = 256

    let root: Element

    init(_ body: [UInt8]) throws(Problem) {
        var reader = Reader(body: body)
        root = try reader.document()
    }

    /// The document as JSON: an object of one member, the root element's name. An element
    /// becomes an object whose attributes are members named `@name` and whose child elements
    /// are members by name, a name repeated among siblings an array; an element of text only,
    /// with no attributes, is that string; other text goes under `#text`, whitespace-only
    /// text beside child elements dropped. Along `records` (its key segments from the root),
    /// each element is an object and the last segment an array, empty or of one where the
    /// body has none or one of it.
    func json(records: [String]) -> [UInt8] {
        var out: [UInt8] = []
        out.append(UInt8(ascii: "{"))
        JSONText.appendQuoted(root.name, to: &out)
        out.append(UInt8(ascii: ":"))
        let along = records.first == root.name ? records.dropFirst() : nil
        Self.write(root, along: along, to: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `element` as JSON; `along` is what is left of the records path below it.
    private static func write(_ element: Element, along: ArraySlice<String>?, to out: inout [UInt8]) {
        let hasChildren = !element.children.isEmpty
        let text = element.texts.count == 1 && !(hasChildren && element.texts[0].blank) ? element.texts[0].text
            : element.texts.filter { !hasChildren || !$0.blank }.map(\.text).joined()
        if along == nil, element.attributes.isEmpty, !hasChildren {
            JSONText.appendQuoted(text, to: &out)
            return
        }
        out.append(UInt8(ascii: "{"))
        var first = true
        func key(_ name: String) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            JSONText.appendQuoted(name, to: &out)
            out.append(UInt8(ascii: ":"))
        }
        for attribute in element.attributes {
            key("@" + attribute.name)
            JSONText.appendQuoted(attribute.value, to: &out)
        }
        // Children grouped by name, in the order each name first appears.
        var order: [String] = []
        var groups: [String: [Int]] = [:]
        for (index, child) in element.children.enumerated() {
            if groups[child.name] == nil { order.append(child.name) }
            groups[child.name, default: []].append(index)
        }
        let next = along?.first
        if let next, along?.count == 1, groups[next] == nil {
            order.append(next)
            groups[next] = []
        }
        for name in order {
            let indices = groups[name] ?? []
            key(name)
            let below = name == next ? along?.dropFirst() : nil
            let asArray = indices.count != 1 || (name == next && along?.count == 1)
            if asArray { out.append(UInt8(ascii: "[")) }
            for (position, index) in indices.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                write(element.children[index], along: asArray ? nil : below, to: &out)
            }
            if asArray { out.append(UInt8(ascii: "]")) }
        }
        if !text.isEmpty {
            key("#text")
            JSONText.appendQuoted(text, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

extension XMLTree {
    /// The reader proper: one pass over the bytes, open elements on a stack of its own.
    private struct Reader {
        let body: [UInt8]
        var position = 0

        init(body: [UInt8]) {
            self.body = body
            // A byte order mark is not text.
            if body.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        }

        mutating func document() throws(Problem) -> Element {
            var open: [Element] = []
            var root: Element?
            while position < body.count {
                if body[position] != UInt8(ascii: "<") {
                    let start = position
                    let text = try self.text()
                    if open.isEmpty {
                        guard text.blank else { throw problem(at: start, "text outside the root element") }
                    } else if !text.text.isEmpty {
                        open[open.count - 1].texts.append(text)
                    }
                    continue
                }
                if starts(with: "<!--") {
                    try skip(past: "-->", from: position + 4, what: "comment")
                } else if starts(with: "<?") {
                    try skip(past: "?>", from: position + 2, what: "processing instruction")
                } else if starts(with: "<![CDATA[") {
                    let start = position
                    guard !open.isEmpty else { throw problem(at: start, "CDATA outside the root element") }
                    let end = try skip(past: "]]>", from: position + 9, what: "CDATA section")
                    open[open.count - 1].texts.append((String(decoding: body[start + 9 ..< end], as: UTF8.self), false))
                } else if starts(with: "<!DOCTYPE") {
                    throw Problem(message: "XML with a DOCTYPE is not read: entities are never expanded")
                } else if starts(with: "<!") {
                    throw problem(at: position, "'<!' starts no comment or CDATA section")
                } else if starts(with: "</") {
                    let start = position
                    position += 2
                    let name = try self.name()
                    skipSpace()
                    guard position < body.count, body[position] == UInt8(ascii: ">") else {
                        throw problem(at: position, "end tag </\(name)> is not closed by '>'")
                    }
                    position += 1
                    guard let element = open.popLast() else { throw problem(at: start, "end tag </\(name)> closes no element") }
                    guard element.name == name else {
                        throw problem(at: start, "end tag </\(name)> does not match <\(element.name)> "
                            + "(opened at \(place(of: element.offset)))")
                    }
                    if open.isEmpty { root = element } else { open[open.count - 1].children.append(element) }
                } else {
                    let start = position
                    guard !(open.isEmpty && root != nil) else { throw problem(at: start, "a second root element") }
                    guard open.count < XMLTree.depthLimit else {
                        throw problem(at: start, "elements nest deeper than \(XMLTree.depthLimit)")
                    }
                    let (element, empty) = try startTag()
                    if empty {
                        if open.isEmpty { root = element } else { open[open.count - 1].children.append(element) }
                    } else {
                        open.append(element)
                    }
                }
            }
            if let unclosed = open.last {
                throw problem(at: body.count, "the body ends inside <\(unclosed.name)> (opened at \(place(of: unclosed.offset)))")
            }
            guard let root else { throw problem(at: body.count, "no root element") }
            return root
        }

        /// `<name attr="v" …>` or `…/>`; position is at `<`.
        private mutating func startTag() throws(Problem) -> (Element, empty: Bool) {
            let start = position
            position += 1
            var element = Element(name: try name(), offset: start)
            while true {
                let spaced = skipSpace()
                guard position < body.count else { throw problem(at: position, "the body ends inside the start tag <\(element.name)>") }
                if body[position] == UInt8(ascii: ">") {
                    position += 1
                    return (element, false)
                }
                if body[position] == UInt8(ascii: "/") {
                    guard position + 1 < body.count, body[position + 1] == UInt8(ascii: ">") else {
                        throw problem(at: position, "'/' in <\(element.name)> is not followed by '>'")
                    }
                    position += 2
                    return (element, true)
                }
                guard spaced else { throw problem(at: position, "attributes of <\(element.name)> must be apart by a space") }
                let attributeStart = position
                let attribute = try name()
                skipSpace()
                guard position < body.count, body[position] == UInt8(ascii: "=") else {
                    throw problem(at: position, "attribute '\(attribute)' of <\(element.name)> has no '='")
                }
                position += 1
                skipSpace()
                guard position < body.count, body[position] == UInt8(ascii: "\"") || body[position] == UInt8(ascii: "'") else {
                    throw problem(at: position, "attribute '\(attribute)' of <\(element.name)> has no quoted value")
                }
                let quote = body[position]
                position += 1
                let value = try decoded(until: quote, attribute: true)
                guard position < body.count else { throw problem(at: attributeStart, "attribute '\(attribute)' of <\(element.name)> is never closed") }
                position += 1
                guard !element.attributes.contains(where: { $0.name == attribute }) else {
                    throw problem(at: attributeStart, "attribute '\(attribute)' appears twice in <\(element.name)>")
                }
                element.attributes.append((attribute, value))
            }
        }

        /// Text up to the next `<`, entities decoded.
        private mutating func text() throws(Problem) -> (text: String, blank: Bool) {
            let start = position
            let text = try decoded(until: UInt8(ascii: "<"), attribute: false)
            let blank = body[start ..< position].allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
            return (text, blank)
        }

        /// The bytes up to `end` (or the end of the body), references decoded; line ends read
        /// as `\n`, and in an attribute each whitespace character as a space.
        private mutating func decoded(until end: UInt8, attribute: Bool) throws(Problem) -> String {
            // Most text has nothing to decode: it is its bytes.
            let start = position
            let stop = body[start...].firstIndex(of: end) ?? body.count
            if !body[start ..< stop].contains(where: { $0 == UInt8(ascii: "&") || $0 == 0x0D
                || (attribute && ($0 == 0x09 || $0 == 0x0A || $0 == UInt8(ascii: "<"))) }) {
                position = stop
                return String(decoding: body[start ..< stop], as: UTF8.self)
            }
            var out: [UInt8] = []
            while position < body.count, body[position] != end {
                let byte = body[position]
                if byte == UInt8(ascii: "&") {
                    out += try reference()
                    continue
                }
                if attribute, byte == UInt8(ascii: "<") { throw problem(at: position, "'<' inside an attribute value") }
                position += 1
                if byte == 0x0D {
                    if position < body.count, body[position] == 0x0A { position += 1 }
                    out.append(attribute ? 0x20 : 0x0A)
                } else if attribute, byte == 0x09 || byte == 0x0A {
                    out.append(0x20)
                } else {
                    out.append(byte)
                }
            }
            return String(decoding: out, as: UTF8.self)
        }

        /// `&lt;` `&gt;` `&amp;` `&quot;` `&apos;`, `&#NN;` or `&#xHH;`; position is at `&`.
        private mutating func reference() throws(Problem) -> [UInt8] {
            let start = position
            guard let semicolon = body[start...].prefix(40).firstIndex(of: UInt8(ascii: ";")) else {
                throw problem(at: start, "'&' starts no reference ending in ';' (write '&amp;' for '&')")
            }
            let name = String(decoding: body[start + 1 ..< semicolon], as: UTF8.self)
            position = semicolon + 1
            switch name {
            case "lt": return [UInt8(ascii: "<")]
            case "gt": return [UInt8(ascii: ">")]
            case "amp": return [UInt8(ascii: "&")]
            case "quot": return [UInt8(ascii: "\"")]
            case "apos": return [UInt8(ascii: "'")]
            default: break
            }
            guard name.hasPrefix("#") else {
                throw problem(at: start, "entity '&\(name);' is not defined: only &lt; &gt; &amp; &quot; &apos; and character references are read")
            }
            let hex = name.hasPrefix("#x")
            let digits = name.dropFirst(hex ? 2 : 1)
            guard !digits.isEmpty, digits.count <= 8, let code = UInt32(digits, radix: hex ? 16 : 10), code != 0,
                  let scalar = Unicode.Scalar(code) else {
                throw problem(at: start, "'&\(name);' is not a character reference XML allows")
            }
            return Array(String(Character(scalar)).utf8)
        }

        /// A name: up to whitespace, `/`, `>`, `=` or a quote; it may not start with a digit,
        /// `-` or `.`.
        private mutating func name() throws(Problem) -> String {
            let start = position
            while position < body.count {
                let byte = body[position]
                if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == UInt8(ascii: "/") || byte == UInt8(ascii: ">")
                    || byte == UInt8(ascii: "=") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") || byte == UInt8(ascii: "<")
                    || byte == UInt8(ascii: "&") {
                    break
                }
                position += 1
            }
            guard position > start, !(UInt8(ascii: "0") ... UInt8(ascii: "9")).contains(body[start]),
                  body[start] != UInt8(ascii: "-"), body[start] != UInt8(ascii: ".") else {
                throw problem(at: start, "a name was expected")
            }
            return String(decoding: body[start ..< position], as: UTF8.self)
        }

        /// Skips whitespace; whether there was any.
        @discardableResult
        private mutating func skipSpace() -> Bool {
            let start = position
            while position < body.count, body[position] == 0x20 || body[position] == 0x09 || body[position] == 0x0A || body[position] == 0x0D {
                position += 1
            }
            return position > start
        }

        private func starts(with text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard position + count <= body.count else { return false }
            return text.withUTF8Buffer { body[position ..< position + count].elementsEqual($0) }
        }

        /// Moves past `end`, searched from `from`; returns where `end` starts.
        @discardableResult
        private mutating func skip(past end: StaticString, from: Int, what: String) throws(Problem) -> Int {
            let marker = end.withUTF8Buffer { Array($0) }
            var index = from
            while index + marker.count <= body.count {
                if body[index] == marker[0], body[index ..< index + marker.count].elementsEqual(marker) {
                    position = index + marker.count
                    return index
                }
                index += 1
            }
            throw problem(at: position, "\(what) is never closed")
        }

        /// `message` at the line and column of byte `offset`.
        private func problem(at offset: Int, _ message: String) -> Problem {
            Problem(message: "XML line \(place(of: offset, prefix: false)): \(message)")
        }

        /// "line L, column C" of byte `offset`, columns counted in characters from 1.
        private func place(of offset: Int, prefix: Bool = true) -> String {
            var line = 1
            var lineStart = 0
            for index in 0 ..< min(offset, body.count) where body[index] == 0x0A {
                line += 1
                lineStart = index + 1
            }
            let column = body[lineStart ..< min(offset, body.count)].count { $0 & 0xC0 != 0x80 } + 1
            return (prefix ? "line " : "") + "\(line), column \(column)"
        }
    }
}
