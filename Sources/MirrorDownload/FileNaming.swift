import Crypto
import Foundation
import MirrorFiles
import MirrorModel

/// Where downloaded files live: `files/<2 hex>/<SHA-256 of the URL>.<extension of the URL>`
/// under the output folder. Nothing the server sends goes into a name, and no name
/// leaves the output folder.
package enum FileNaming {
    package static let folder = ReservedNames.filesFolder
    /// Downloads in progress, in `folder`; swept at the start of every run.
    static let partialName = ".partial"
    package static let partialFolder = "\(folder)/\(partialName)"

    package static func relativePath(for url: String) -> String {
        let hash = Hex.string(Crypto.SHA256.hash(data: Array(url.utf8)))
        let name = hash + (fileExtension(of: url).map { "." + $0 } ?? "")
        return "\(folder)/\(hash.prefix(2))/\(name)"
    }

    /// The URL path's extension, 1 to 8 ASCII letters or digits, lowercased.
    static func fileExtension(of url: String) -> String? {
        // An ASCII URL is read byte by byte, as it reads character by character below.
        url.utf8.allSatisfy { $0 < 0x80 } ? asciiExtension(of: Array(url.utf8)) : characterExtension(of: url)
    }

    /// `fileExtension`, character by character.
    static func characterExtension(of url: String) -> String? {
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

    /// `fileExtension` of an ASCII URL.
    static func asciiExtension(of url: [UInt8]) -> String? {
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        var path = url[...]
        if let scheme = url.indices.first(where: { url[$0...].starts(with: "://".utf8) }) { path = url[(scheme + 3)...] }
        path = path.prefix { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        guard let first = path.firstIndex(of: slash) else { return nil }
        // The last component that is not empty: trailing slashes are passed over.
        guard let last = path[first...].split(separator: slash).last,
              let point = last.lastIndex(of: dot), point != last.startIndex else { return nil }
        let ext = last[(point + 1)...]
        guard (1...8).contains(ext.count),
              ext.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        else { return nil }
        return String(decoding: ext.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// The name of a download's temporary file in `partialFolder`: the run's pid and a number.
    static func temporaryName(pid: Int32, number: Int) -> String {
        "\(pid)-\(number)"
    }

    /// Whether `name` is one `temporaryName` makes.
    static func isTemporaryName(_ name: String) -> Bool {
        let parts = name.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        return parts.count == 2 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { (0x30...0x39).contains($0) } }
    }

    /// Removes the temporary files killed runs left half-written: in `files/.partial`, when
    /// it and `files` are real folders, the regular files with names `temporaryName` makes.
    /// Nothing else is touched, and no link is followed. Only while holding the output lock.
    package static func sweepPartials(in output: String) {
        guard let root = try? FileSystem.openFolder(output) else { return }
        defer { try? FileSystem.close(root) }
        guard let files = try? OutputFolder.openFolder(folder, in: root, create: false) else { return }
        defer { try? FileSystem.close(files) }
        guard let descriptor = try? OutputFolder.openFolder(partialName, in: files, create: false) else { return }
        defer { try? FileSystem.close(descriptor) }
        guard let names = FileSystem.names(in: descriptor)?.filter(isTemporaryName) else { return }
        for name in names where FileStatus(entry: name, in: descriptor)?.kind == .regular {
            try? FileSystem.remove(name, in: descriptor)
        }
    }
}

