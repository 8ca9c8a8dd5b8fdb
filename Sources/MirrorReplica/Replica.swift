public import Foundation
import MirrorFiles
import MirrorModel
import MirrorReplay
import Synchronization

/// A copy of a published mirror on the device, answering the API's own URLs offline.
///
/// `sync(from:)` brings the replica to what a source's `manifest.json` names: a prefix
/// `mirror publish` writes to (`https://cdn.example.com/events/`, `file:///srv/pub/events`) or
/// a folder `mirror snapshot` wrote. Only objects whose SHA-256 the replica does not hold
/// are fetched, each is checked (size and SHA-256) before anything reads it, and the new
/// generation replaces the old in one rename. `response(for:)` answers a request for a page
/// of the API as `mirror serve` does, from the generation the replica holds.
///
/// ```swift
/// let replica = try Replica(folder: caches.appendingPathComponent("events"))
/// try await replica.sync(from: URL(string: "https://cdn.example.com/events/")!)
/// if let answer = try replica.response(for: URLRequest(url: URL(string: "https://api.example.com/events?page=2")!)) {
///     print(answer.status, answer.body.count)
/// }
/// ```
///
/// One folder per account where the publish is per account (`--account`): a replica holds
/// what one source names.
public final class Replica: Sendable {
    /// The replica's folder.
    public let folder: URL
    let layout: ReplicaFolder
    /// The generation answers are read from, held while it is read (see `GenerationHold`).
    private let reading = Mutex<Reading?>(nil)

    private struct Reading {
        let hold: GenerationHold
        let pages: ReplayedPages
    }

    /// Where an `http(s)://` source is read from: `MirrorDevice`'s `URLSession`, the
    /// command line's HTTP client.
    let remote: RemoteSources

    /// The bytes of answers kept in memory, to be sent again while the generation is the same.
    static let cacheLimit = 8 << 20

    /// A replica in `folder`, made if it is not there, that reads `http(s)://` sources
    /// through `remote`; what it holds stays until a sync replaces it.
    package init(folder: URL, remote: @escaping RemoteSources) throws {
        self.folder = folder
        self.remote = remote
        layout = ReplicaFolder(path: folder.path)
        try layout.prepare()
    }

    /// The generation the replica holds; nil before its first sync.
    public var generation: String? { layout.current() }

    /// The answer to a request for `url` from the generation the replica holds, as `mirror
    /// serve` gives it (status, the API's kept headers, `ETag`, body, a 304 to a matching
    /// `If-None-Match`), with `X-Mirror-Replica` naming the generation; nil when the replica
    /// holds no page for it (or nothing at all).
    package func answer(_ url: URL, method: String, body: [UInt8], ifNoneMatch: String?) throws -> ReplicaResponse? {
        guard let reading = current() else { return nil }
        let origin = Self.origin(of: url)
        var target = url.path.isEmpty ? "/" : url.path
        if let query = url.query { target += "?" + query }
        let answer: ReplayAnswer
        do {
            answer = try reading.pages.answer(method: method, target: target, body: body, origin: origin,
                                              ifNoneMatch: ifNoneMatch)
        } catch {
            throw ReplicaError.folder("cannot read generation \(reading.hold.generation): \(SystemError.reason(error))")
        }
        let generation = ("X-Mirror-Replica", reading.hold.generation)
        switch answer {
        case let .whole(status, headers, body):
            guard status != 404 else { return nil }
            return ReplicaResponse(url: url, status: status, headers: headers + [generation], body: Data(body))
        case let .kept(entry, notModified):
            guard let kept = entry.answer as? KeptBytes else { return nil }
            let headers = notModified ? kept.headers.filter { $0.0.lowercased() != "content-type" } : kept.headers
            return ReplicaResponse(url: url, status: notModified ? 304 : kept.status, headers: headers + [generation],
                                   body: notModified ? Data() : Data(kept.body))
        case let .streamed(status, headers, page):
            defer { page.finish() }
            var whole = page.first
            var cursor = PageStream.Cursor()
            do {
                while !cursor.done { whole += try page.piece(&cursor) }
            } catch {
                throw ReplicaError.folder("cannot read generation \(reading.hold.generation): \(SystemError.reason(error))")
            }
            whole += page.last
            return ReplicaResponse(url: url, status: status, headers: headers + [generation], body: Data(whole))
        }
    }

    /// Runs `body` with the id and folder of the generation the replica holds, held while
    /// `body` reads it; nil before the first sync.
    package func withGeneration<T>(_ body: (_ id: String, _ folder: String) throws -> T) rethrows -> T? {
        guard let reading = current() else { return nil }
        return try withExtendedLifetime(reading.hold) { try body(reading.hold.generation, reading.hold.folder) }
    }

    /// The generation `current` names, opened (and the one before let go) when it changed.
    private func current() -> Reading? {
        let named = layout.current()
        if let reading = reading.withLock({ $0 }), reading.hold.generation == named { return reading }
        let opened = GenerationHold.current(in: layout).map {
            Reading(hold: $0, pages: ReplayedPages(output: $0.folder, cache: PageCache(limit: Self.cacheLimit)))
        }
        // Let go after the lock: the last hold of a replaced generation removes it.
        let previous = reading.withLock { reading in
            defer { reading = opened }
            return reading
        }
        withExtendedLifetime(previous) {}
        return opened
    }

    /// The folder a server answers from for `folder`: a replica's `current` (which a sync
    /// replaces as a whole, and whose files a server sees replaced), else `folder` itself.
    package static func answeredFolder(_ folder: String) -> String {
        let layout = ReplicaFolder(path: folder)
        return layout.current() != nil && FileSystem.exists(layout.generations) ? layout.currentLink : folder
    }

    /// `scheme://host[:port]` of `url`: the origin the answer's URLs of the API point to.
    static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? "https"
        var origin = "\(scheme)://\(url.host ?? "")"
        if let port = url.port { origin += ":\(port)" }
        return origin
    }
}

/// An answer from the replica.
public struct ReplicaResponse: Sendable {
    package init(url: URL, status: Int, headers: [(String, String)], body: Data) {
        self.url = url
        self.status = status
        self.headers = headers
        self.body = body
    }

    public let url: URL
    public let status: Int
    /// In the order they are set; `X-Mirror-Replica` (the generation) last.
    public let headers: [(String, String)]
    public let body: Data

    /// The value of the header `name` (any case).
    public func header(_ name: String) -> String? {
        headers.last { $0.0.lowercased() == name.lowercased() }?.1
    }
}
