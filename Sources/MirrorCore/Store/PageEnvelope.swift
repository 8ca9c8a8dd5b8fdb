/// A page's response without its records, as `_mirror_pages.envelope` keeps it: the
/// compacted JSON with the records value emptied at `recordsAt` (`[]` for an array, `{}`
/// for a response that is one record) and every secret masked. `mirror serve` puts the
/// page's records back there, as the table holds them now.
public struct PageEnvelope: Sendable, Equatable {
    public var text: [UInt8]
    /// Byte offset in `text` of the emptied records value; nil when the records value was
    /// `null` (a page with nothing to put back).
    public var recordsAt: Int?

    public init(text: [UInt8], recordsAt: Int?) {
        self.text = text
        self.recordsAt = recordsAt
    }

    /// `document` with its records value `records` emptied, secrets masked by `redactor`
    /// inside its strings (keys and values): a number is data, and masking one would make
    /// the text no longer JSON.
    init(document: JSONDocument, records: JSONValue, redactor: Redactor) {
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
    var head: ArraySlice<UInt8> { text[..<(recordsAt ?? text.count)] }

    /// The text after the records value.
    var tail: ArraySlice<UInt8> { recordsAt.map { text[($0 + 2)...] } ?? [] }

    /// The records value is one record (`{}`), not an array of them.
    var holdsOneRecord: Bool { recordsAt.map { text[$0] == UInt8(ascii: "{") } ?? false }
}
