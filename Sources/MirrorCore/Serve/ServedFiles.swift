import CDispatch
import Foundation
import Glibc
import MirrorDownload
import MirrorModel
import MirrorStore

/// Downloaded files, served from the output folder: only files a database's `_mirror_files`
/// lists as downloaded, opened without following a link at any level, so no request
/// reaches outside the output folder (`..`, encoded or not, or a planted link).
public struct ServedFiles: Sendable {
    /// A file open for serving: the bytes `range` of it, or a reason not to.
    public enum Served: Sendable {
        /// `status` 200 or 206: the descriptor (the caller's to close) and the bytes to send.
        case file(OpenFile, range: Range<Int>, size: Int, status: Int, headers: [(String, String)])
        /// A 304 (the ETag matched), 404 or 416, with its headers.
        case answer(ReadAPI.Answer)
    }

    /// A file descriptor closed when the last one holding it lets go: whether its response
    /// is sent whole, cut short, or never started (the client left before the head).
    public final class OpenFile: Sendable {
        public let descriptor: Int32

        init(_ descriptor: Int32) {
            self.descriptor = descriptor
        }

        deinit {
            close(descriptor)
        }
    }

    public let output: String
    let connections = ReadConnections.files()

    public init(output: String) {
        self.output = output
    }

    /// The file at `relative` (below `files/`, as `_mirror_files.path` has it, decoded),
    /// with `Range` and `If-None-Match` honoured.
    public func serve(_ relative: String, range: String?, ifNoneMatch: String?) throws -> Served {
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, parts[0] == FileNaming.folder,
              !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." || $0.contains("\u{0}") }),
              let entry = try FileLookup.find(relative, in: output, connections: connections) else {
            return .answer(.error("no downloaded file '\(relative)'", status: 404))
        }
        let etag = "\"\(entry.sha256)\""
        // A downloaded page or image is shown, never run: an HTML or SVG file from the API
        // cannot reach the read API from this origin.
        var headers: [(String, String)] = [("ETag", etag), ("Accept-Ranges", "bytes"),
                                           ("Content-Type", entry.contentType ?? "application/octet-stream"),
                                           ("X-Content-Type-Options", "nosniff"), ("Content-Security-Policy", "sandbox")]
        if EntityTags.match(ifNoneMatch, etag) {
            var answer = ReadAPI.Answer(status: 304, body: [])
            answer.headers = headers.filter { $0.0 != "Content-Type" }
            return .answer(answer)
        }
        guard let descriptor = try open(parts) else {
            return .answer(.error("no downloaded file '\(relative)'", status: 404))
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            return .answer(.error("no downloaded file '\(relative)'", status: 404))
        }
        let size = Int(info.st_size)
        guard let range else { return .file(OpenFile(descriptor), range: 0..<size, size: size, status: 200, headers: headers) }
        switch Self.byteRange(range, size: size) {
        case .whole:
            return .file(OpenFile(descriptor), range: 0..<size, size: size, status: 200, headers: headers)
        case let .part(part):
            headers.append(("Content-Range", "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(size)"))
            return .file(OpenFile(descriptor), range: part, size: size, status: 206, headers: headers)
        case .unsatisfiable:
            close(descriptor)
            var answer = ReadAPI.Answer.error("the range '\(range)' is outside the file's \(size) bytes", status: 416)
            answer.headers = [("Content-Range", "bytes */\(size)")]
            return .answer(answer)
        }
    }

    enum ByteRange: Equatable {
        case whole
        case part(Range<Int>)
        case unsatisfiable
    }

    /// One `bytes=` range of RFC 9110 (`a-b`, `a-`, `-n`); anything else is served whole.
    static func byteRange(_ header: String, size: Int) -> ByteRange {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return .whole }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        let ends = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard ends.count == 2 else { return .whole }
        if ends[0].isEmpty {
            guard let suffix = Int(ends[1]) else { return .whole }
            guard suffix > 0 else { return .unsatisfiable }
            return size == 0 ? .unsatisfiable : .part(max(0, size - suffix)..<size)
        }
        guard let start = Int(ends[0]), start >= 0 else { return .whole }
        guard start < size else { return .unsatisfiable }
        if ends[1].isEmpty { return .part(start..<size) }
        guard let end = Int(ends[1]), end >= start else { return .whole }
        return .part(start..<(end >= size - 1 ? size : end + 1))
    }

    /// Opens `files/…/name` in the output folder, no link followed at any level.
    private func open(_ parts: [String]) throws -> Int32? {
        var folder = Foundation.open(output, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { return nil }
        for part in parts.dropLast() {
            let next: Int32
            do {
                next = try OutputFolder.openFolder(part, in: folder, create: false)
            } catch {
                close(folder)
                return nil
            }
            close(folder)
            folder = next
        }
        defer { close(folder) }
        let descriptor = openat(folder, parts.last!, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        return descriptor >= 0 ? descriptor : nil
    }
}
