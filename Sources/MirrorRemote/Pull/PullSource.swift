import AsyncHTTPClient
import Crypto
package import Foundation
import MirrorFiles
import MirrorHTTP
import MirrorModel
package import MirrorReplica
import NIOCore
import NIOHTTP1
import NIOPosix

/// A published prefix or a snapshot at an `http(s)://` base URL, as `mirror pull` reads it
/// (the command line's HTTP client, so the executable does not link `URLSession`): the
/// manifest conditionally (`If-None-Match`), objects streamed to disk as they arrive and
/// resumed with `Range` where a piece of them is there already. One client per sync, let go
/// when it is done; an answer whose body stops for a minute fails.
package struct PullSource: SyncSource {
    let base: URL
    private let client: AsyncHTTPClient.HTTPClient

    /// How long an answer may keep its head or the next piece of its body waiting.
    static let idle = TimeAmount.seconds(60)

    /// The largest manifest read.
    static let manifestLimit = 64 << 20

    package init(base: URL) {
        self.base = base
        var configuration = AsyncHTTPClient.HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(10), read: Self.idle)
        client = AsyncHTTPClient.HTTPClient(eventLoopGroup: .singletonMultiThreadedEventLoopGroup,
                                            configuration: configuration)
    }

    package var shown: String { ReplicaError.shown(base) }

    package func manifest(unless etag: String?) async throws(ReplicaError) -> (bytes: [UInt8], etag: String)? {
        let url = objectURL("manifest.json", under: base)
        var request = HTTPClientRequest(url: url.absoluteString)
        if let etag { request.headers.add(name: "If-None-Match", value: etag) }
        request.headers.add(name: "Cache-Control", value: "no-cache")
        let response = try await send(request, url)
        if response.status == .notModified { return nil }
        guard response.status == .ok else { throw .source("GET \(ReplicaError.shown(url)): HTTP \(response.status.code)") }
        let body: ByteBuffer
        do {
            body = try await response.body.collect(upTo: Self.manifestLimit)
        } catch is NIOTooManyBytesError {
            throw .source("the manifest is larger than \(Self.manifestLimit >> 20) MiB")
        } catch {
            throw failure(error, url)
        }
        return (Array(buffer: body), response.headers.first(name: "etag") ?? "")
    }

    package func fetch(_ remote: String, into file: Int32, holding offset: Int,
                       received: @escaping @Sendable (Int) -> Void) async throws(ReplicaError) -> Fetched {
        let url = objectURL(remote, under: base)
        var request = HTTPClientRequest(url: url.absoluteString)
        if offset > 0 { request.headers.add(name: "Range", value: "bytes=\(offset)-") }
        let response = try await send(request, url)
        var hash = SHA256()
        var startedAt = 0
        switch response.status {
        case .partialContent where offset > 0:
            // The rest of a resumed object, from where the file ends.
            let range = response.headers.first(name: "content-range") ?? ""
            guard range.hasPrefix("bytes \(offset)-") else {
                throw .source("\(remote): the source answered a range (\(range)) that does not start at byte \(offset)")
            }
            do throws(FileError) {
                hash = try hashed(file, upTo: offset)
            } catch {
                throw .folder("cannot read what was fetched of \(remote): \(SystemError.reason(error))")
            }
            startedAt = offset
        case .ok:
            // The whole object, again where a piece of it was there.
            if offset > 0 {
                do throws(FileError) {
                    try FileSystem.rewind(file)
                    try FileSystem.truncate(file, to: 0)
                } catch {
                    throw .folder("cannot start \(remote) again: \(SystemError.reason(error))")
                }
            }
        default:
            throw .source("GET \(ReplicaError.shown(url)): HTTP \(response.status.code)")
        }
        do {
            for try await piece in response.body {
                try piece.withUnsafeReadableBytes { (bytes) throws(ReplicaError) in
                    try keep(bytes, of: remote, in: file, hashing: &hash)
                }
                received(piece.readableBytes)
            }
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw failure(error, url)
        }
        return Fetched(startedAt: startedAt, sha256: Hex.string(hash.finalize()))
    }

    package func get(_ url: URL, token: String?, limit: Int) async throws(ReplicaError) -> (status: Int, body: [UInt8]) {
        var request = HTTPClientRequest(url: url.absoluteString)
        if let token { request.headers.add(name: "Authorization", value: "Bearer " + token) }
        request.headers.add(name: "Cache-Control", value: "no-cache")
        let response = try await send(request, url)
        do {
            let body = try await response.body.collect(upTo: limit)
            return (Int(response.status.code), Array(buffer: body))
        } catch is NIOTooManyBytesError {
            throw .source("GET \(ReplicaError.shown(url)): the answer is larger than \(limit >> 20) MiB")
        } catch {
            throw failure(error, url)
        }
    }

    package func close() async {
        try? await client.shutdown()
    }

    private func send(_ request: HTTPClientRequest, _ url: URL) async throws(ReplicaError) -> HTTPClientResponse {
        do {
            return try await client.execute(request, timeout: Self.idle)
        } catch {
            throw failure(error, url)
        }
    }

    /// A transfer that failed: cancelled, or why, as a walk says it, with the URL.
    private func failure(_ error: any Error, _ url: URL) -> ReplicaError {
        if Task.isCancelled { return .cancelled }
        let shown = ReplicaError.shown(url)
        let reason = HTTPError.classify(error, url: RedactedURL(real: url.absoluteString, shown: shown), status: nil).reason
        return .source("GET \(shown): \(reason)")
    }
}
