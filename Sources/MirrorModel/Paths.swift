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
}
