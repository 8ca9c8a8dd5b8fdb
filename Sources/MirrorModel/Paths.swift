import Foundation

/// Path arithmetic that Foundation's `NSString.deletingLastPathComponent` gets wrong on
/// Linux: it traps on a one-character name (`o`, `o/`).
package enum Paths {
    /// The folder part of `path`: `a/b` → `a`, `/a` → `/`, `a` → `` (trailing slashes ignored).
    package static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        if slash == trimmed.startIndex { return "/" }
        var parent = trimmed[..<slash]
        while parent.count > 1, parent.hasSuffix("/") { parent = parent.dropLast() }
        return String(parent)
    }

    /// Whether `path` names something inside `folder` (or the folder itself), both read
    /// against the current folder.
    package static func isInside(_ path: String, folder: String) -> Bool {
        let base = URL(fileURLWithPath: folder).standardizedFileURL.path
        let target = URL(fileURLWithPath: path).standardizedFileURL.path
        return target == base || target.hasPrefix(base.hasSuffix("/") ? base : base + "/")
    }
}
