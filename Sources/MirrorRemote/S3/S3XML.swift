import Foundation

/// Reads the few XML documents S3 answers (an error, a ListObjectsV2 page, a multipart
/// upload's start and end): flat elements without attributes, some repeated inside one
/// level of blocks (`<Contents>`). It finds `<Name>…</Name>` and decodes the five named
/// entities and numeric character references; it is no general XML parser. FoundationXML
/// would do, but it would tie the shipped binary to libxml2 for these few lines.
struct S3XML: Sendable {
    let text: Substring

    init(_ bytes: [UInt8]) {
        text = Substring(String(decoding: bytes, as: UTF8.self))
    }

    init(_ text: Substring) {
        self.text = text
    }

    /// The decoded text of the first `<name>` element, if any.
    func text(_ name: String) -> String? {
        raw(name, in: text[...]).map { Self.decoded($0.inner) }
    }

    /// Each `<name>` element, in order, as a document of its own.
    func blocks(_ name: String) -> [S3XML] {
        var found: [S3XML] = []
        var rest = text[...]
        while let element = raw(name, in: rest) {
            found.append(S3XML(element.inner))
            rest = rest[element.end...]
        }
        return found
    }

    /// The inside of the first `<name>…</name>` (or empty for `<name/>`) in `text`, and where it ends.
    private func raw(_ name: String, in text: Substring) -> (inner: Substring, end: Substring.Index)? {
        var rest = text
        while let open = rest.range(of: "<" + name) {
            let after = open.upperBound
            guard after < rest.endIndex else { return nil }
            switch rest[after] {
            case ">":
                let start = rest.index(after: after)
                guard let close = rest[start...].range(of: "</" + name + ">") else { return nil }
                return (rest[start..<close.lowerBound], close.upperBound)
            case "/":
                let end = rest.index(after: after)
                guard end < rest.endIndex, rest[end] == ">" else { return nil }
                return (rest[end..<end], rest.index(after: end))
            case " ", "\t", "\n", "\r":
                // Attributes (a root's xmlns): skipped.
                guard let gt = rest[after...].firstIndex(of: ">") else { return nil }
                if rest[rest.index(before: gt)] == "/" { return (rest[gt..<gt], rest.index(after: gt)) }
                let start = rest.index(after: gt)
                guard let close = rest[start...].range(of: "</" + name + ">") else { return nil }
                return (rest[start..<close.lowerBound], close.upperBound)
            default:
                // `<NameLonger>`: not this element.
                rest = rest[after...]
            }
        }
        return nil
    }

    /// The text with `&amp; &lt; &gt; &quot; &apos;` and `&#N;`, `&#xN;` decoded.
    static func decoded(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var out = ""
        var rest = text
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";"), rest.distance(from: amp, to: semicolon) <= 10 else {
                out += "&"
                rest = rest[rest.index(after: amp)...]
                continue
            }
            let entity = rest[rest.index(after: amp)..<semicolon]
            var scalar: Unicode.Scalar?
            switch entity {
            case "amp": scalar = "&"
            case "lt": scalar = "<"
            case "gt": scalar = ">"
            case "quot": scalar = "\""
            case "apos": scalar = "'"
            default:
                if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                    scalar = UInt32(entity.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                } else if entity.hasPrefix("#") {
                    scalar = UInt32(entity.dropFirst(), radix: 10).flatMap(Unicode.Scalar.init)
                }
            }
            if let scalar {
                out.unicodeScalars.append(scalar)
                rest = rest[rest.index(after: semicolon)...]
            } else {
                out += "&"
                rest = rest[rest.index(after: amp)...]
            }
        }
        return out + rest
    }
}
