import Foundation

/// RFC 8288 `Link` header parsing: just enough to find `rel="next"`.
package enum LinkHeader {
    /// The target of the first link whose `rel` includes `next`, resolved against `base`.
    package static func next(in header: String, base: String) -> String? {
        for link in splitLinks(header) {
            guard let open = link.firstIndex(of: "<"), let close = link[open...].firstIndex(of: ">") else { continue }
            let target = String(link[link.index(after: open)..<close])
            let params = link[link.index(after: close)...].split(separator: ";")
            for param in params {
                let pair = param.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard pair.count == 2, pair[0].lowercased() == "rel" else { continue }
                let rels = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased().split(separator: " ")
                if rels.contains("next") {
                    return URL(string: target, relativeTo: URL(string: base))?.absoluteString ?? target
                }
            }
        }
        return nil
    }

    /// Splits on commas that are outside `<…>` and quotes.
    private static func splitLinks(_ header: String) -> [Substring] {
        var parts: [Substring] = []
        var start = header.startIndex
        var inAngle = false
        var inQuote = false
        var index = header.startIndex
        while index < header.endIndex {
            switch header[index] {
            case "<" where !inQuote: inAngle = true
            case ">" where !inQuote: inAngle = false
            case "\"" where !inAngle: inQuote.toggle()
            case "," where !inAngle && !inQuote:
                parts.append(header[start..<index])
                start = header.index(after: index)
            default: break
            }
            index = header.index(after: index)
        }
        parts.append(header[start...])
        return parts
    }
}
