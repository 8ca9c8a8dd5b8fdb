import Foundation

/// Request conditions against an answer's ETag, compared as RFC 9110 compares them:
/// `If-None-Match` weakly (§13.1.2), so `W/"x"` matches `"x"` either way round and `*` any
/// answer; `If-Range` strongly (§13.1.5), so only the same strong tag matches. Replayed
/// pages and downloaded files answer 304 by the one rule.
package enum EntityTags {
    package static func match(_ ifNoneMatch: String?, _ etag: String) -> Bool {
        guard let ifNoneMatch else { return false }
        let opaque = weakless(etag)
        return ifNoneMatch.split(separator: ",").contains { listed in
            let tag = listed.trimmingCharacters(in: .whitespaces)
            return tag == "*" || weakless(tag) == opaque
        }
    }

    /// Whether a `Range` holds under `ifRange`: always without one; with one, only when it is
    /// `etag` itself and strong (a date never is: no answer sends `Last-Modified`).
    package static func ifRange(_ ifRange: String?, holds etag: String) -> Bool {
        guard let ifRange else { return true }
        return !etag.hasPrefix("W/") && ifRange.trimmingCharacters(in: .whitespaces) == etag
    }

    private static func weakless(_ tag: String) -> Substring {
        tag.hasPrefix("W/") ? tag.dropFirst(2) : Substring(tag)
    }
}
