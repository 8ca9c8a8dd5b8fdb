import Foundation

/// `If-None-Match` against an answer's ETag, as RFC 9110 §13.1.2 compares them: weakly, so
/// `W/"x"` matches `"x"` either way round, and `*` matches any answer. Replayed pages and
/// downloaded files answer 304 by this one rule.
enum EntityTags {
    static func match(_ ifNoneMatch: String?, _ etag: String) -> Bool {
        guard let ifNoneMatch else { return false }
        let opaque = weakless(etag)
        return ifNoneMatch.split(separator: ",").contains { listed in
            let tag = listed.trimmingCharacters(in: .whitespaces)
            return tag == "*" || weakless(tag) == opaque
        }
    }

    private static func weakless(_ tag: String) -> Substring {
        tag.hasPrefix("W/") ? tag.dropFirst(2) : Substring(tag)
    }
}
