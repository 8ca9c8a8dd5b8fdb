import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MirrorFiles
import MirrorModel

/// Where a sync reads a `manifest.json` and the objects it names: a folder (`file://`, or a
/// path), or an `http(s)://` base URL (a CDN, a bucket's public website, `mirror serve`'s
/// files, a presigned-URL front).
protocol SyncSource: Sendable {
    /// The source as messages show it.
    var shown: String { get }

    /// The manifest's bytes and ETag; nil when it still has `etag` (an HTTP 304).
    func manifest(unless etag: String?) async throws(ReplicaError) -> (bytes: [UInt8], etag: String)?

    /// Fetches `remote` into `file`, open for writing at its end, which holds its first
    /// `offset` bytes already. `received` is told of each piece.
    func fetch(_ remote: String, into file: Int32, holding offset: Int,
               received: @escaping @Sendable (Int) -> Void) async throws(ReplicaError) -> Fetched
}

/// What a fetch left in its file.
struct Fetched: Sendable {
    /// Where the bytes it wrote start: the offset it was given, or 0 when the source sent the
    /// whole object again.
    let startedAt: Int
    /// The SHA-256 of the whole file, in hex.
    let sha256: String
}

/// The SHA-256 of the first `size` bytes of `file` (what an earlier sync fetched), to go on from.
func hashed(_ file: Int32, upTo size: Int) throws(FileError) -> SHA256 {
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

/// The source `url` names.
func syncSource(at url: URL, session: URLSession) throws(ReplicaError) -> any SyncSource {
        switch url.scheme?.lowercased() {
    case "file", nil:
        return FolderSource(folder: url.path)
    case "http", "https":
        return HTTPSource(base: url, session: session)
    default:
            throw .source("\(ReplicaError.shown(url)): a source is an http://, https:// or file:// URL, or a folder")
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
            let piece = UnsafeRawBufferPointer(rebasing: buffer[..<got])
            hash.update(bufferPointer: piece)
            do throws(FileError) {
                try FileSystem.write(piece, to: file)
            } catch {
                throw .folder("cannot write what is fetched of \(remote): \(SystemError.reason(error))")
            }
            at += got
            received(got)
        }
    }
}
