/// A page's response without its records, as `_mirror_pages.envelope` keeps it: the
/// compacted JSON with the records value emptied at `recordsAt` (`[]` for an array, `{}`
/// for a response that is one record) and every secret masked, and the response's
/// end-to-end headers (`_mirror_pages.headers`). `mirror serve` puts the page's records
/// back there, as the table holds them now, and sends the headers again.
import Foundation
package import MirrorJSON

package struct PageEnvelope: Sendable, Equatable {
    /// A response header kept with the page.
    package struct Header: Sendable, Equatable {
        package let name: String
        package let value: String
    }

    package var text: [UInt8]
    /// Byte offset in `text` of the emptied records value; nil when the records value was
    /// `null` (a page with nothing to put back).
    package var recordsAt: Int?
    /// What a client may page by besides the body (`Link`, `X-Pagination`,
    /// `X-Total-Count`), names lowercased, in name order (see `kept(_:redactor:)`).
    package var headers: [Header] = []

    package init(text: [UInt8], recordsAt: Int?, headers: [Header] = []) {
        self.text = text
        self.recordsAt = recordsAt
        self.headers = headers
    }

    /// Headers that are not the response's own to keep: hop-by-hop ones (RFC 9110 §7.6.1),
    /// cookies, credentials, and what describes this one transfer or its caching, which
    /// `mirror serve` says of its own answer (length, coding, validators, date).
    static let notKept: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade", "set-cookie", "set-cookie2", "cookie", "authorization", "www-authenticate",
        "content-length", "content-encoding", "content-range", "accept-ranges", "etag", "last-modified", "date", "server",
        "age", "expires", "cache-control", "pragma", "vary", "alt-svc", "strict-transport-security",
    ]

    /// The most header bytes kept with one page: a response's headers are small, and more
    /// is no paging information.
    static let maxHeaderBytes = 16 << 10

    /// The headers of `received` (names lowercased) worth sending again: not those in
    /// `notKept` or named by its `Connection`, none that holds a secret (in any form
    /// `redactor` knows), in name order, at most `maxHeaderBytes` of them.
    package static func kept(_ received: [String: String], redactor: Redactor) -> [Header] {
        let hopByHop = Set((received["connection"] ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        })
        var kept: [Header] = []
        var bytes = 0
        for (name, value) in received.sorted(by: { $0.key < $1.key })
        where !notKept.contains(name) && !hopByHop.contains(name) && redactor.redact(value) == value {
            bytes += name.utf8.count + value.utf8.count
            guard bytes <= maxHeaderBytes else { break }
            kept.append(Header(name: name, value: value))
        }
        return kept
    }

    /// The headers as `_mirror_pages.headers` holds them: a JSON array of `[name, value]`
    /// pairs; nil when there are none.
    package var headersJSON: String? {
        guard !headers.isEmpty else { return nil }
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (index, header) in headers.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "["))
            JSONText.appendQuoted(header.name, to: &out)
            out.append(UInt8(ascii: ","))
            JSONText.appendQuoted(header.value, to: &out)
            out.append(UInt8(ascii: "]"))
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Headers read back from `_mirror_pages.headers`; none for NULL or a text that is
    /// not such an array.
    package static func headers(json: String?) -> [Header] {
        guard let json, let document = try? JSONDocument(parsing: Array(json.utf8)) else { return [] }
        return document.root.elements.compactMap { pair in
            let parts = pair.elements
            guard parts.count == 2, let name = parts[0].stringValue, let value = parts[1].stringValue else { return nil }
            return Header(name: name, value: value)
        }
    }

    /// `document` with its records value `records` emptied, secrets masked by `redactor`
    /// inside its strings (keys and values): a number is data, and masking one would make
    /// the text no longer JSON.
    package init(document: JSONDocument, records: JSONValue, redactor: Redactor) {
        let range = records.byteRange
        func masked(_ part: ArraySlice<UInt8>) -> [UInt8] {
            redactor.isEmpty ? Array(part) : Self.maskingStrings(part, redactor: redactor)
        }
        let placeholder: String
        switch records.kind {
        case .array: placeholder = "[]"
        case .object: placeholder = "{}"
        default:
            self.init(text: masked(document.bytes[...]), recordsAt: nil)
            return
        }
        let head = masked(document.bytes[..<range.lowerBound])
        self.init(text: head + Array(placeholder.utf8) + masked(document.bytes[range.upperBound...]), recordsAt: head.count)
    }

    /// Compacted JSON text (whole strings, as a document's bytes are cut at values) with
    /// `redactor` applied to each string's content.
    static func maskingStrings(_ text: ArraySlice<UInt8>, redactor: Redactor) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            out.append(byte)
            index += 1
            guard byte == UInt8(ascii: "\"") else { continue }
            let start = index
            while index < text.endIndex, text[index] != UInt8(ascii: "\"") {
                index += text[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            let end = min(index, text.endIndex)
            out.append(contentsOf: redactor.redact(String(decoding: text[start..<end], as: UTF8.self)).utf8)
            if index < text.endIndex {
                out.append(UInt8(ascii: "\""))
                index += 1
            }
        }
        return out
    }

    /// The text before the records value.
    package var head: ArraySlice<UInt8> { text[..<(recordsAt ?? text.count)] }

    /// The text after the records value.
    package var tail: ArraySlice<UInt8> { recordsAt.map { text[($0 + 2)...] } ?? [] }

    /// The records value is one record (`{}`), not an array of them.
    package var holdsOneRecord: Bool { recordsAt.map { text[$0] == UInt8(ascii: "{") } ?? false }
}
