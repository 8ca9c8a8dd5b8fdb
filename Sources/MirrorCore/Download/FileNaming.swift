import Crypto
import Foundation

/// Where downloaded files live: `files/<2 hex>/<SHA-256 of the URL>.<extension of the URL>`
/// under the output folder. Nothing the server sends goes into a name, and no name
/// leaves the output folder.
public enum FileNaming {
    public static let folder = "files"
    /// Downloads in progress; swept at the start of every run.
    public static let partialFolder = "files/.partial"

    public static func relativePath(for url: String) -> String {
        let hash = Hex.string(Crypto.SHA256.hash(data: Array(url.utf8)))
        let name = hash + (fileExtension(of: url).map { "." + $0 } ?? "")
        return "\(folder)/\(hash.prefix(2))/\(name)"
    }

    /// The URL path's extension, 1 to 8 ASCII letters or digits, lowercased.
    static func fileExtension(of url: String) -> String? {
        var path = Substring(url)
        if let scheme = path.range(of: "://") { path = path[scheme.upperBound...] }
        path = path.prefix { $0 != "?" && $0 != "#" }
        guard let slash = path.firstIndex(of: "/") else { return nil }
        let last = path[slash...].split(separator: "/").last ?? ""
        guard let dot = last.lastIndex(of: "."), dot != last.startIndex else { return nil }
        let ext = last[last.index(after: dot)...]
        guard (1...8).contains(ext.count), ext.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return nil }
        return ext.lowercased()
    }

    /// Removes what killed runs left half-written. Only while holding the output lock.
    public static func sweepPartials(in output: String) {
        let folder = (output as NSString).appendingPathComponent(partialFolder)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in names { unlink((folder as NSString).appendingPathComponent(name)) }
    }
}

/// How one download ended, as `_mirror_files` keeps it.
public struct FileOutcome: Sendable {
    public enum Status: String, Sendable {
        case ok, failed
        /// Not an absolute http(s) URL: never fetched.
        case refused
    }

    public var url: RedactedURL
    public var status: Status
    /// Relative to the output folder.
    public var path: String?
    public var size: Int?
    public var contentType: String?
    public var sha256: String?
    public var etag: String?
    public var lastModified: String?
    public var httpStatus: Int?
    public var error: String?
    public var time: String
}
