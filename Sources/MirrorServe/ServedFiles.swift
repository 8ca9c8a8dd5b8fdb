import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import MirrorDownload
import MirrorFiles
import MirrorModel
import MirrorReplay
import MirrorStore
import NIOCore

/// Downloaded files, served from the output folder: only files a database's `_mirror_files`
/// lists as downloaded, opened without following a link at any level, so no request
/// reaches outside the output folder (`..`, encoded or not, or a planted link). A file's
/// ETag is its SHA-256, and its `Content-Type` the one it was downloaded with.
///
/// `If-None-Match`, `Range` and `If-Range` are answered here, not by Hummingbird's
/// `FileMiddleware` (2.28.1), which would change what docs/serve.md documents: it makes its own
/// weak ETag of the file's modification time and size, and compares `If-None-Match` and
/// `If-Range` with that, each whole field at once; it reads `bytes=-5` as the first six
/// bytes rather than the last five, answers 416 to a range it cannot read, and a range past
/// the end with a malformed 206; and it types a file by its extension.
package struct ServedFiles: Sendable {
    /// A file to send, or the 304 that stands for it.
    enum Served: Sendable {
        /// 200 or 206: the bytes `range` of the open file.
        case file(OpenFile, range: Range<Int>, status: HTTPResponse.Status, headers: HTTPFields)
        /// 200 or 206: those bytes, read already.
        case bytes(ByteBuffer, status: HTTPResponse.Status, headers: HTTPFields)
        /// The client holds the file as it is.
        case notModified(HTTPFields)

        /// Whether it is a file of at most `readWhole` bytes, read whole at once over TLS.
        var isSmallFile: Bool {
            guard case let .file(_, range, _, _) = self else { return false }
            return range.count <= ServedFiles.readWhole
        }
    }

    /// A file descriptor closed when the last one holding it lets go: whether its response
    /// is sent whole, cut short, or never started (the client left before the head).
    final class OpenFile: Sendable {
        let descriptor: Int32

        init(_ descriptor: Int32) {
            self.descriptor = descriptor
        }

        deinit {
            try? FileSystem.close(descriptor)
        }
    }

    package let output: String
    /// What sends a file's bytes from the file to the connection with `sendfile`: on
    /// connections without TLS (nil with TLS).
    let sends: FileSends?
    let connections = ReadConnections.files()
    /// The folder's databases, listed again only when its entries change: listing it for
    /// every file asked for was 6 % of serve's CPU time while it sent files in `scripts/bench/bench-serve.sh`.
    let watcher: CommitWatcher
    /// The files answered lately, kept open while the databases stay as they were.
    let opened: OpenedFiles

    init(output: String, sends: FileSends?, keepingOpen limit: Int) {
        self.output = output
        self.sends = sends
        watcher = CommitWatcher(output: output)
        opened = OpenedFiles(limit: limit)
    }

    /// Over TLS, files, or ranges of one, of at most this many bytes are read whole on the
    /// thread pool in the same step that finds and opens them, and sent in one buffer; larger
    /// ones are sent 64 KB at a time.
    static let readWhole = 256 << 10

    /// The answer to a GET or HEAD of the file at `relative` (below `files/`, as
    /// `_mirror_files.path` has it, decoded), asked on `channel`. A file answered before,
    /// while no database of the folder has changed since (`CommitWatcher`), is answered from
    /// the descriptor kept open for it (`OpenedFiles`), on the request's own task, once
    /// `lstat` finds its path still leading to that file; else it is found and opened in one
    /// step on the thread pool. Without TLS its bytes go from the file to the connection with
    /// `sendfile`, none read by the process (see `SentFiles`). Over TLS, up to `readWhole`
    /// bytes are read in that same step; a larger file's bytes are read 64 KB at a time on
    /// the thread pool, the next once the connection has taken the last (see
    /// `MirrorServer.taken`), so memory stays bounded whatever the file's size and however
    /// slowly the client reads. A HEAD request gets the headers alone.
    func response(to relative: String, request: Request, channel: any Channel) async throws -> Response {
        let asked = Asked(range: request.headers[.range], ifRange: request.headers[.ifRange],
                          ifNoneMatch: request.headers[.ifNoneMatch])
        let head = request.method == .head
        let moment = watcher.moment(after: MirrorServer.arrival(of: request))
        // Over TLS a file of up to `readWhole` bytes is read in the step that finds it.
        let readsWhole = !head && sends == nil
        var served: Served
        if let moment, let found = opened.found(relative, at: moment), let info = found.stillThere() {
            served = try Self.served(found, info, asked)
            if readsWhole, served.isSmallFile {
                served = try await MirrorServer.blocking { [served] in try Self.readWhole(served) }
            }
        } else {
            // Only a path found this way is ever kept, so a kept one needs no second look.
            let parts = try Self.parts(of: relative)
            served = try await MirrorServer.blocking { () throws -> Served in
                let served = try find(relative, parts, asked, keeping: moment)
                return readsWhole ? try Self.readWhole(served) : served
            }
        }
        if let (status, fields) = bodiless(served, head: head, channel: channel) {
            return Response(status: status, headers: fields)
        }
        let loop = channel.eventLoop
        switch served {
        case let .notModified(headers):  // bodiless, above
            return Response(status: .notModified, headers: headers)
        case let .bytes(bytes, status, headers):
            return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: bytes))
        case let .file(file, range, status, headers):
            let body = ResponseBody(contentLength: range.count) { writer in
                var offset = range.lowerBound
                while offset < range.upperBound {
                    try await MirrorServer.taken(by: &writer, on: loop)
                    let piece = offset ..< min(offset + (1 << 16), range.upperBound)
                    let chunk = try await MirrorServer.blocking { try Self.read(file, piece) }
                    try await writer.write(chunk)
                    offset = piece.upperBound
                }
                try await writer.finish(nil)
            }
            return Response(status: status, headers: headers, body: body)
        }
    }

    /// The answer's status and fields when they are all that is written: a 304, a HEAD
    /// request's headers, or a file whose bytes `sends` writes after them (no TLS). Nil when
    /// the body is written as bytes: read already, or read a piece at a time to be encrypted.
    func bodiless(_ served: Served, head: Bool, channel: any Channel) -> (HTTPResponse.Status, HTTPFields)? {
        switch served {
        case let .notModified(headers):
            return (.notModified, headers)
        case .bytes:
            return nil
        case let .file(file, range, status, headers):
            if head {
                var headers = headers
                headers[.contentLength] = String(range.count)
                return (status, headers)
            }
            guard let sends else { return nil }
            let pending = FileSends.Pending(descriptor: file.descriptor, range: range, holder: file)
            return (status, sends.fields(headers, sending: pending, on: channel))
        }
    }

    /// The answer to a GET or HEAD (`head`) of the file at `relative`, as `response(to:)`
    /// gives it, when the file is kept open from an earlier answer while the databases stay
    /// at the moment after `arrival`, and the answer is all fields (`bodiless`): nothing
    /// blocks on the way. Nil, with nothing done, for any other: not kept, moved, a range
    /// outside the file (whose 416 the router writes).
    func kept(_ relative: String, asked: Asked, head: Bool, arrival: UInt64?,
              channel: any Channel) -> (HTTPResponse.Status, HTTPFields)? {
        guard let moment = watcher.moment(after: arrival), let found = opened.found(relative, at: moment),
              let info = found.stillThere(), let served = try? Self.served(found, info, asked) else { return nil }
        return bodiless(served, head: head, channel: channel)
    }

    /// `served` with its file's bytes read, when it is a file of at most `readWhole` bytes.
    static func readWhole(_ served: Served) throws -> Served {
        guard case let .file(file, range, status, headers) = served, served.isSmallFile else { return served }
        return .bytes(try read(file, range), status: status, headers: headers)
    }

    /// The bytes `range` of `file`, in one buffer. A file grown shorter since it was measured
    /// fails the request (`FileError.endedEarly`).
    static func read(_ file: OpenFile, _ range: Range<Int>) throws -> ByteBuffer {
        try ByteBuffer.read(range.count) { buffer throws(FileError) in
            try FileSystem.readExactly(file.descriptor, into: buffer, at: range.lowerBound)
        }
    }

    /// What a request asks of a file beside its path: one `Range`, kept by `If-Range`, and
    /// `If-None-Match`.
    struct Asked: Sendable {
        let range: String?
        let ifRange: String?
        let ifNoneMatch: String?
    }

    /// A downloaded file found in an index, and open.
    struct Found: Sendable {
        let entry: FileLookup.Entry
        let file: OpenFile
        /// Where it was found: the output folder's path and the file's below it.
        let path: String
        /// What `fstat` said of it when it was opened.
        let opened: FileStatus

        /// What `lstat` says of its path now, while that still leads to the file opened, as a
        /// regular file: nil once it was removed, moved away, or another file (or a link) put
        /// in its place. The path is not walked a folder at a time as the opening was, so a
        /// folder on it made a link since leads here only to the very file opened.
        func stillThere() -> FileStatus? {
            guard let now = FileStatus(entryAt: path), now.kind == .regular,
                  now.device == opened.device, now.inode == opened.inode else { return nil }
            return now
        }
    }

    /// The parts of `relative` (`files`, a folder, a name), when it could name a downloaded
    /// file; else the 404 of a file no index lists.
    static func parts(of relative: String) throws -> [String] {
        let parts = relative.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].elementsEqual(FileNaming.folder.utf8),
              !parts.contains(where: { $0.isEmpty || $0.elementsEqual(".".utf8) || $0.elementsEqual("..".utf8) || $0.contains(0) })
        else {
            throw missing(relative)
        }
        return parts.map { String(decoding: $0, as: UTF8.self) }
    }

    static func missing(_ relative: String) -> HTTPError {
        HTTPError(.notFound, message: "no downloaded file '\(relative)'")
    }

    /// The file at `relative` (split as `parts`), found in the folder's indexes and opened,
    /// served as `asked`: 404 for a file no index lists as downloaded, or that is not where
    /// it says. With `moment`, the moment of the databases before they were read, the file
    /// opened is kept open for the next answers while they stay at it. Blocks: to be run on
    /// the thread pool.
    func find(_ relative: String, _ parts: [String], _ asked: Asked, keeping moment: CommitWatcher.Moment?) throws -> Served {
        // The databases the moment was taken of, not listed a second time.
        let databases = moment?.databaseNames ?? watcher.databaseNames()
        guard let entry = try FileLookup.find(relative, in: output, databases: databases, connections: connections) else {
            throw Self.missing(relative)
        }
        let etag = "\"\(entry.sha256)\""
        if EntityTags.match(asked.ifNoneMatch, etag) { return .notModified([.eTag: etag, .acceptRanges: "bytes"]) }
        guard let file = try open(parts), let info = FileStatus(descriptor: file.descriptor), info.kind == .regular else {
            throw Self.missing(relative)
        }
        let found = Found(entry: entry, file: file, path: (output as NSString).appendingPathComponent(relative), opened: info)
        if let moment { opened.keep(found, as: relative, at: moment) }
        return try Self.served(found, info, asked)
    }

    /// `found`, whose file `stat` said `info`, with `If-None-Match`, one `Range` and `If-Range`
    /// honoured: 416 for a range outside the file.
    static func served(_ found: Found, _ info: FileStatus, _ asked: Asked) throws -> Served {
        let etag = "\"\(found.entry.sha256)\""
        var headers: HTTPFields = [.eTag: etag, .acceptRanges: "bytes"]
        if EntityTags.match(asked.ifNoneMatch, etag) { return .notModified(headers) }
        headers[.contentType] = found.entry.contentType ?? "application/octet-stream"
        let (file, size) = (found.file, info.size)
        // A range of another version of the file than the client's is no part of this one.
        guard let range = asked.range, EntityTags.ifRange(asked.ifRange, holds: etag) else {
            return .file(file, range: 0..<size, status: .ok, headers: headers)
        }
        switch byteRange(range, size: size) {
        case .whole:
            return .file(file, range: 0..<size, status: .ok, headers: headers)
        case let .part(part):
            headers[.contentRange] = "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(size)"
            return .file(file, range: part, status: .partialContent, headers: headers)
        case .unsatisfiable:
            throw HTTPError(.rangeNotSatisfiable, headers: [.contentRange: "bytes */\(size)"],
                            message: "the range '\(range)' is outside the file's \(size) bytes")
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
    private func open(_ parts: [String]) throws -> OpenFile? {
        guard var folder = try? FileSystem.openFolder(output) else { return nil }
        for part in parts.dropLast() {
            let next: Int32
            do {
                next = try OutputFolder.openFolder(part, in: folder, create: false)
            } catch {
                try? FileSystem.close(folder)
                return nil
            }
            try? FileSystem.close(folder)
            folder = next
        }
        defer { try? FileSystem.close(folder) }
        return (try? FileSystem.openForReading(parts.last!, in: folder)).map(OpenFile.init)
    }
}

extension ByteBuffer {
    /// A buffer of the `count` bytes `fill` writes, in place, into the room it is given.
    static func read(_ count: Int, _ fill: (UnsafeMutableRawBufferPointer) throws(FileError) -> Void) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { free in
            try fill(UnsafeMutableRawBufferPointer(rebasing: free[..<count]))
            return count
        }
        return buffer
    }
}
