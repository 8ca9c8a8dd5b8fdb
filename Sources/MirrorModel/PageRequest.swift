import Foundation
import MirrorJSON

/// A request as a stored page is found again by it: the URL's path and its query's
/// name-value pairs, percent-decoded (`+` is a space), and the body. In a stored request,
/// `REDACTED` (where a secret was) stands for any text, and a query pair holding it may be
/// left out: the secret is not needed to get the page back.
///
/// `_mirror_pages.request_key` holds `key`: the path and the pairs in order, with the
/// pairs that hold a secret left out. A request is looked up by the keys it could have
/// (`probes`), then checked whole (`matches`).
package struct PageRequest: Sendable, Equatable {
    package struct Pair: Sendable, Hashable, Comparable {
        package var name: String
        package var value: String

        package static func < (a: Pair, b: Pair) -> Bool { (a.name, a.value) < (b.name, b.value) }
    }

    package var path: String
    package var pairs: [Pair]

    /// An absolute URL (`https://host/path?query`) or a request target (`/path?query`).
    package init(url: String) {
        var rest = Substring(url)
        if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
        if !rest.hasPrefix("/"), let scheme = rest.range(of: "://") {
            let authority = rest[scheme.upperBound...]
            rest = authority.firstIndex(where: { $0 == "/" || $0 == "?" }).map { authority[$0...] } ?? ""
        }
        let query = rest.firstIndex(of: "?")
        self.init(path: String(query.map { rest[..<$0] } ?? rest), query: query.map { String(rest[rest.index(after: $0)...]) })
    }

    /// The path is percent-decoded but for `%2F`: `/a%2Fb` and `/a/b` are two paths.
    package init(path: String, query: String?) {
        if path.utf8.contains(UInt8(ascii: "%")) {
            let kept = path.replacingOccurrences(of: "%2F", with: "%252F", options: .caseInsensitive)
            self.path = kept.removingPercentEncoding ?? path
        } else {
            // Nothing to decode (most paths): Foundation's string search is left out.
            self.path = path.isEmpty ? "/" : path
        }
        pairs = (query ?? "").split(separator: "&").map { part in
            let equals = part.firstIndex(of: "=")
            return Pair(name: Self.decode(equals.map { part[..<$0] } ?? part),
                        value: equals.map { Self.decode(part[part.index(after: $0)...]) } ?? "")
        }
    }

    private static func decode(_ text: Substring) -> String {
        let utf8 = text.utf8
        // Nothing to decode (most names and values): Foundation's string search is left out.
        guard utf8.contains(UInt8(ascii: "+")) || utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }

    /// The path and query as a request names them: `/items?page=2&key=REDACTED`.
    package static func target(of url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") {
            let authority = rest[scheme.upperBound...]
            rest = authority.firstIndex(where: { $0 == "/" || $0 == "?" }).map { authority[$0...] } ?? "/"
        }
        return rest.hasPrefix("?") ? "/" + rest : String(rest)
    }

    /// `scheme://host[:port]` of an absolute URL.
    package static func origin(of url: String) -> String? {
        guard let scheme = url.range(of: "://") else { return nil }
        let end = url[scheme.upperBound...].firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? url.endIndex
        return String(url[..<end])
    }

    private static func holdsSecret(_ text: String) -> Bool { text.contains(Redactor.mask) }

    /// The stored form's key: its pairs that hold no secret, in order.
    package var key: String { Self.key(path: path, pairs: pairs.filter { !Self.holdsSecret($0.value) }) }

    private static func key(path: String, pairs: [Pair]) -> String {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=?%+")
        func encode(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text }
        let query = pairs.sorted().map { encode($0.name) + "=" + encode($0.value) }.joined(separator: "&")
        return encode(path) + (query.isEmpty ? "" : "?" + query)
    }

    /// The keys a stored request this one matches may have: its own, and its own without
    /// the pairs of one or two of its names (a secret sent with any value). A stored path
    /// holding a secret is not among them (`matches` finds it in a scan).
    /// A pair repeated with the same value counts once too (`page=1&size=100&page=1`, as
    /// some clients build a query).
    package var probes: [String] {
        let names = Array(Set(pairs.map(\.name))).sorted()
        var omitted: [Set<String>] = [[]] + names.map { [$0] }
        if names.count <= 8 {
            for (index, first) in names.enumerated() {
                for second in names[(index + 1)...] { omitted.append([first, second]) }
            }
        }
        var seen: Set<Pair> = []
        let once = pairs.filter { seen.insert($0).inserted }
        let forms = once.count == pairs.count ? [pairs] : [pairs, once]
        return forms.flatMap { pairs in
            omitted.map { left in Self.key(path: path, pairs: pairs.filter { !left.contains($0.name) }) }
        }
    }

    /// Whether `self`, a request, is the stored request `stored`: the same path and pairs,
    /// where a stored `REDACTED` stands for any text and a pair holding one may be absent.
    package func matches(_ stored: PageRequest) -> Bool {
        guard Self.fits(path, stored.path) else { return false }
        var left = pairs
        for pair in stored.pairs where !Self.holdsSecret(pair.value) {
            guard let index = left.firstIndex(of: pair) else { return false }
            left.remove(at: index)
        }
        for pair in stored.pairs where Self.holdsSecret(pair.value) {
            if let index = left.firstIndex(where: { $0.name == pair.name && Self.fits($0.value, pair.value) }) {
                left.remove(at: index)
            }
        }
        // What is left may repeat a stored pair exactly: asked twice, it is one pair.
        return left.allSatisfy { stored.pairs.contains($0) }
    }

    /// Whether a request body is the stored one: the same bytes, or the same JSON value
    /// where a stored string's `REDACTED` stands for any text.
    /// A stored body that is not JSON (form-encoded, or a secret masked in a number) matches
    /// as text, each `REDACTED` standing for any text.
    package static func bodyMatches(_ body: [UInt8], stored: String) -> Bool {
        if body.elementsEqual(stored.utf8) { return true }
        guard !body.isEmpty, !stored.isEmpty else { return false }
        if let sent = try? JSONDocument(parsing: body), let kept = try? JSONDocument(parsing: Array(stored.utf8)) {
            return sameValue(sent.root, kept.root)
        }
        return stored.contains(Redactor.mask) && fits(String(decoding: body, as: UTF8.self), stored)
    }

    private static func sameValue(_ sent: JSONValue, _ kept: JSONValue) -> Bool {
        switch (sent.kind, kept.kind) {
        case (.object, .object):
            let a = sent.members, b = kept.members
            guard a.count == b.count else { return false }
            return b.allSatisfy { member in sent[member.key].map { sameValue($0, member.value) } ?? false }
        case (.array, .array):
            let a = sent.elements, b = kept.elements
            return a.count == b.count && zip(a, b).allSatisfy { sameValue($0, $1) }
        case (.string, .string):
            return fits(sent.stringValue ?? "", kept.stringValue ?? "")
        case let (left, right) where left == right:
            return sent.rawBytes.elementsEqual(kept.rawBytes)
        default:
            return false
        }
    }

    /// Whether `text` fits `pattern`, in which each `REDACTED` stands for any text.
    package static func fits(_ text: String, _ pattern: String) -> Bool {
        let parts = pattern.components(separatedBy: Redactor.mask)
        guard parts.count > 1 else { return text == pattern }
        guard text.hasPrefix(parts[0]), text.dropFirst(parts[0].count).hasSuffix(parts[parts.count - 1]) else { return false }
        var rest = Substring(text).dropFirst(parts[0].count).dropLast(parts[parts.count - 1].count)
        for part in parts.dropFirst().dropLast() where !part.isEmpty {
            guard let found = rest.range(of: part) else { return false }
            rest = rest[found.upperBound...]
        }
        return true
    }
}
