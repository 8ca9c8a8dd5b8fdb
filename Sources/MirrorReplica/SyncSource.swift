package import Crypto
package import Foundation
package import MirrorFiles
import MirrorModel

/// Where a sync reads a `manifest.json` and the objects it names: a folder (`file://`, or a
/// path), or an `http(s)://` base URL (a CDN, a bucket's public website, `mirror serve`'s
/// files, a presigned-URL front).
package protocol SyncSource: Sendable {
    /// The source as messages show it.
    var shown: String { get }

    /// The manifest's bytes and ETag; nil when it still has `etag` (an HTTP 304).
    func manifest(unless etag: String?) async throws(ReplicaError) -> (bytes: [UInt8], etag: String)?

    /// Fetches `remote` into `file`, open for writing at its end, which holds its first
    /// `offset` bytes already. `received` is told of each piece.
    func fetch(_ remote: String, into file: Int32, holding offset: Int,
               received: @escaping @Sendable (Int) -> Void) async throws(ReplicaError) -> Fetched

    /// The status and body of a GET of `url` (an address of its own, such as `mirror serve`'s
    /// change feed), sending `Authorization: Bearer <token>` when a token is given. A body
    /// longer than `limit` bytes fails.
    func get(_ url: URL, token: String?, limit: Int) async throws(ReplicaError) -> (status: Int, body: [UInt8])

    /// Lets go of what the source holds (connections) once the sync is done with it.
    func close() async
}

extension SyncSource {
    package func close() async {}

    package func get(_ url: URL, token: String?, limit: Int) async throws(ReplicaError) -> (status: Int, body: [UInt8]) {
        throw .source("\(ReplicaError.shown(url)): \(shown) reads no addresses but its own; read it over http(s)")
    }
}

/// Makes the source of an `http(s)://` base URL.
package typealias RemoteSources = @Sendable (URL) -> any SyncSource

/// The URL of `path` under an `http(s)://` source's `base`, whose own query (a presigned
/// signature, say) the object's URL keeps.
package func objectURL(_ path: String, under base: URL) -> URL {
    guard var parts = URLComponents(url: base, resolvingAgainstBaseURL: false) else { return base }
    parts.percentEncodedPath = (parts.percentEncodedPath.hasSuffix("/") ? parts.percentEncodedPath : parts.percentEncodedPath + "/")
        + path.split(separator: "/").map { $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? String($0) }
            .joined(separator: "/")
    return parts.url ?? base
}

/// Hashes a piece of `remote` that arrived and writes it at the end of `file`.
package func keep(_ piece: UnsafeRawBufferPointer, of remote: String, in file: Int32,
                  hashing hash: inout SHA256) throws(ReplicaError) {
    hash.update(bufferPointer: piece)
    do throws(FileError) {
        try FileSystem.write(piece, to: file)
    } catch {
        throw .folder("cannot write what is fetched of \(remote): \(SystemError.reason(error))")
    }
}

/// What a fetch left in its file.
package struct Fetched: Sendable {
    /// Where the bytes it wrote start: the offset it was given, or 0 when the source sent the
    /// whole object again.
    package let startedAt: Int
    /// The SHA-256 of the whole file, in hex.
    package let sha256: String

    package init(startedAt: Int, sha256: String) {
        self.startedAt = startedAt
        self.sha256 = sha256
    }
}

/// The SHA-256 of the first `size` bytes of `file` (what an earlier sync fetched), to go on from.
package func hashed(_ file: Int32, upTo size: Int) throws(FileError) -> SHA256 {
    var hash = SHA256()
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
    defer { buffer.deallocate() }
    var at = 0
    while at < size {
        let got = try FileSystem.read(file, into: buffer, at: at)
        guard got > 0 else { break }
        hash.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[..<min(got, size - at)]))
        at += got
    }
    return hash
}

extension Replica {
    /// The source `url` names.
    func source(at url: URL) throws(ReplicaError) -> any SyncSource {
        switch url.scheme?.lowercased() {
        case "file", nil:
            return FolderSource(folder: url.path)
        case "http", "https":
            return remote(url)
        default:
            throw .source("\(ReplicaError.shown(url)): a source is an http://, https:// or file:// URL, or a folder")
        }
    }
}

/// A published prefix or a snapshot in a folder. Its manifest's "ETag" is the SHA-256 of
/// its bytes.
struct FolderSource: SyncSource {
    let folder: String

    var shown: String { folder }

    func manifest(unless etag: String?) async throws(ReplicaError) -> (bytes: [UInt8], etag: String)? {
        let path = folder + "/manifest.json"
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .source("\(path): \(FileSystem.absence(path).map { SystemError.reason($0) } ?? "cannot be read")")
        }
        let tag = "\"" + Hex.string(SHA256.hash(data: data)) + "\""
        return tag == etag ? nil : (Array(data), tag)
    }

    func fetch(_ remote: String, into file: Int32, holding offset: Int,
               received: @escaping @Sendable (Int) -> Void) async throws(ReplicaError) -> Fetched {
        let path = folder + "/" + remote
        var hash: SHA256
        do throws(FileError) {
            hash = try hashed(file, upTo: offset)
        } catch {
            throw .folder("cannot read what was fetched of \(remote): \(SystemError.reason(error))")
        }
        let input: Int32
        do throws(FileError) {
            input = try FileSystem.openForReading(path)
        } catch {
            throw .source("\(path): \(SystemError.reason(error))")
        }
        defer { try? FileSystem.close(input) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var at = offset
        while true {
            if Task.isCancelled { throw .cancelled }
            let got: Int
            do throws(FileError) {
                got = try FileSystem.read(input, into: buffer, at: at)
            } catch {
                throw .source("\(path): \(SystemError.reason(error))")
            }
            if got == 0 { return Fetched(startedAt: offset, sha256: Hex.string(hash.finalize())) }
            try keep(UnsafeRawBufferPointer(rebasing: buffer[..<got]), of: remote, in: file, hashing: &hash)
            at += got
            received(got)
        }
    }
}
