import Crypto
import Foundation
import MirrorJSON
import MirrorModel
package import MirrorStore

/// The mirrored API, answered offline: a request for a page a run stored gets the page's
/// envelope with its records put back as the table holds them now, and the envelope's URLs
/// of the API pointing to whoever asks (`origin`). Secrets are not needed (see
/// `PageRequest`) and never sent: the envelope was stored with them masked. A page no larger
/// than `chunk` is kept as it was assembled (`PageCache`) and sent again from there while
/// nothing it is made of has changed. What carries the answer (`mirror serve`'s HTTP, an
/// app's own requests in process) is its caller's: this holds no server and no connection.
///
/// Whether anything was committed to the folder's databases since an answer was kept is
/// asked on the request's own task, not on the thread pool SQLite's other work runs on:
/// a `readdir` of the output folder, a `stat` and a `PRAGMA data_version` per database,
/// which read the file system's and SQLite's shared memory and wait for no disk. Measured
/// with `perf` under `scripts/bench/bench-serve.sh`: 12% of serve's CPU, about 30 µs of the
/// 240 µs a kept page's answer costs in all, most of which is Hummingbird's and NIO's.
package struct ReplayedPages: Sendable {
    /// Bytes of records a page may hold to be answered whole (with a `Content-Length`).
    package static let chunk = 1 << 18

    /// Bytes of records a larger page reads at a time: what its answer holds in memory at
    /// once, besides its envelope, its ids and what the connection buffers. A piece ends
    /// after the record that reaches it: 48 KB leaves room for records of up to 16 KB in the
    /// 64 KB buffer it is sent in (NIO rounds a buffer's capacity up to a power of two).
    package static let piece = 48 << 10

    /// 404: no page is held for `method target`; `closest` are the stored requests nearest it.
    private static func missing(method: String, target: String, closest: [String]) -> ReplayAnswer {
        var text = Array("{\"error\":".utf8)
        JSONText.appendQuoted("the mirror holds no page for \(method) \(target)", to: &text)
        text.append(contentsOf: ",\"closest\":[".utf8)
        for (index, known) in closest.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ",")) }
            JSONText.appendQuoted(known, to: &text)
        }
        text.append(contentsOf: "]}\n".utf8)
        return .whole(status: 404, headers: [contentType], body: text)
    }

    package let output: String
    let connections = ReadConnections.pages()
    package let cache: PageCache
    let watcher: CommitWatcher

    package init(output: String, cache: PageCache) {
        self.output = output
        self.cache = cache
        watcher = CommitWatcher(output: output)
    }

    /// The answer to `method target` with `body`, for a client that reaches it at `origin`:
    /// from the cache when it holds a current one, else read from the databases (which
    /// blocks: see `assembled`).
    package func answer(method: String, target: String, body: [UInt8], origin: String, ifNoneMatch: String?)
        throws -> ReplayAnswer {
        let moment = moment()
        if let moment, let kept = kept(target: target, body: body, origin: origin, ifNoneMatch: ifNoneMatch, at: moment) {
            return kept
        }
        return try assembled(method: method, target: target, body: body, origin: origin, ifNoneMatch: ifNoneMatch,
                             moment: moment)
    }

    /// The moment of the folder's databases before an answer reads them, which it is kept
    /// at; nil when the cache keeps nothing. Waits for no disk (see above). With `arrival`,
    /// when the request arrived (`CommitWatcher.now()`), a moment begun since may be shared.
    package func moment(after arrival: UInt64? = nil) -> CommitWatcher.Moment? {
        cache.limit > 0 ? watcher.moment(after: arrival) : nil
    }

    /// The answer the cache holds for `target`, `body` and `origin`, when it was assembled,
    /// or found current, at `moment`; nil when it holds none. Reads no database.
    package func kept(target: String, body: [UInt8], origin: String, ifNoneMatch: String?,
                      at moment: CommitWatcher.Moment) -> ReplayAnswer? {
        cache.entry(PageCache.Key(target: target, body: body, origin: origin), at: moment)
            .map { .kept($0, notModified: EntityTags.match(ifNoneMatch, $0.etag)) }
    }

    /// The answer to `method target` (`/items?page=2`) with `body`, for a client that
    /// reaches the mirror at `origin` (`http://127.0.0.1:8080`), read from the databases:
    /// SQLite's work, to be run where blocking is allowed. With `moment`, the moment of the
    /// databases before this answer reads them, a page is kept in the cache, or sent from it
    /// when its ETag is the one it was kept with. With `permits`, a page whose table and
    /// account it refuses is answered as one the mirror does not hold, naming no other.
    package func assembled(method: String, target: String, body: [UInt8], origin: String, ifNoneMatch: String?,
                           moment: CommitWatcher.Moment?,
                           permits: (@Sendable (_ table: String, _ account: String) -> Bool)? = nil) throws -> ReplayAnswer {
        let request = PageRequest(url: target)
        let page: FoundPage
        switch try PageLookup.find(request, body: body, in: output, connections: connections) {
        case let .found(found) where permits.map({ !$0(found.table, found.account) }) ?? false:
            found.finish()
            return Self.missing(method: method, target: target, closest: [])
        case .missing where permits != nil:
            return Self.missing(method: method, target: target, closest: [])
        case let .found(found):
            page = found
        case let .missing(closest):
            return Self.missing(method: method, target: target, closest: closest)
        }
        let apiOrigin = PageRequest.origin(of: page.url)
        let head = Self.pointing(page.envelope.head, from: apiOrigin, to: origin)
        let tail = Self.pointing(page.envelope.tail, from: apiOrigin, to: origin)
        // The API's own headers, its URLs pointing here too: a client pages by them as it
        // paged the API (`Link`, `X-Pagination`).
        let kept = page.envelope.headers.map { header in
            (header.name, String(decoding: Self.pointing(ArraySlice(header.value.utf8), from: apiOrigin, to: origin), as: UTF8.self))
        }
        // Everything the answer is made of but the records, whose changes `version` follows.
        var hash = SHA256()
        let row = "\(page.rowid) \(page.status) \(page.table) \(page.account) \(page.nextURL ?? "")"
        let keptText = kept.map { "\($0.0): \($0.1)\n" }.joined()
        for part in [Array(row.utf8), head, page.ids, tail, Array(keptText.utf8)] {
            hash.update(data: part)
            hash.update(data: [0])
        }
        let etag = "\"\(page.version)-\(Hex.string(hash.finalize().prefix(8)))\""
        var headers = [("ETag", etag)] + kept
        // A next page neither the body nor a kept header names was named in a header the
        // job read and that was not kept: a `Link` header names it here.
        if let next = page.nextURL, !kept.contains(where: { $0.0 == "link" }) {
            let target = PageRequest.target(of: next)
            let named = [target, target.replacingOccurrences(of: "/", with: "\\/")].contains { form in
                [head, tail, Array(keptText.utf8)].contains { String(decoding: $0, as: UTF8.self).contains(form) }
            }
            if !named { headers.append(("Link", "<\(origin)\(target)>; rel=\"next\"")) }
        }
        let key = PageCache.Key(target: target, body: body, origin: origin)
        if let moment, let entry = cache.entry(key, etag: etag, currentAt: moment) {
            page.finish()
            return .kept(entry, notModified: EntityTags.match(ifNoneMatch, entry.etag))
        }
        if EntityTags.match(ifNoneMatch, etag) {
            page.finish()
            return .whole(status: 304, headers: headers.filter { $0.0 != "content-type" }, body: [])
        }
        guard page.envelope.recordsAt != nil else {
            page.finish()
            return .kept(keep(status: page.status, headers: headers, body: head, etag: etag, for: key, at: moment),
                         notModified: false)
        }
        let one = page.envelope.holdsOneRecord
        var first = head
        if !one { first.append(UInt8(ascii: "[")) }
        var cursor = FoundPage.Cursor()
        var whole = first
        try page.read(&cursor, into: &whole, budget: head.count + 1 + Self.chunk, limit: one ? 1 : nil)
        var last: [UInt8] = one ? (cursor.records == 0 ? Array("{}".utf8) : []) : [UInt8(ascii: "]")]
        last.append(contentsOf: tail)
        guard cursor.done else {
            // Larger than a chunk: its records are read again from the first, a piece at a
            // time as they are sent, in the same read transaction; what was read is let go.
            return .streamed(status: page.status, headers: [Self.contentType] + headers,
                             page: PageStream(first: first, last: last, page: page))
        }
        page.finish()
        return .kept(keep(status: page.status, headers: headers, body: whole + last, etag: etag, for: key, at: moment),
                     notModified: false)
    }

    /// A JSON answer's `Content-Type`, which the API's own, if a page kept one, replaces.
    static let contentType = ("Content-Type", "application/json")

    /// An answer as the cache holds it, in its server's form (`PageCache.form`), kept there
    /// when assembled at a known `moment`. Its headers are `Content-Type` (but on a 304),
    /// then `headers`.
    private func keep(status: Int, headers: [(String, String)], body: [UInt8], etag: String, for key: PageCache.Key,
                      at moment: CommitWatcher.Moment?) -> PageCache.Entry {
        let answer = cache.form.init(status: status, headers: (status == 304 ? [] : [Self.contentType]) + headers, body: body)
        let entry = PageCache.Entry(status: status, answer: answer, etag: etag, moment: moment)
        if moment != nil { cache.keep(entry, for: key) }
        return entry
    }

    /// `text` with each URL of `apiOrigin` (also written with `\/`, as some encoders do)
    /// made a URL of `origin`: each `scheme://authority` in it is read as an origin and
    /// compared as one, so a URL with no path, a scheme or host in capitals, a default port
    /// written or left out, each link of a list, is one of the API's as any other is. A host
    /// that only begins as the API's does, or an authority with a user (`…@host`), is not.
    static func pointing(_ text: ArraySlice<UInt8>, from apiOrigin: String?, to origin: String) -> [UInt8] {
        guard let apiOrigin, let api = Origin(apiOrigin), !text.isEmpty else { return Array(text) }
        let bytes = Array(text)
        let plain = Array(origin.utf8)
        let escaped = Array(origin.replacingOccurrences(of: "/", with: "\\/").utf8)
        func isLetter(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) }
        func isSchemeByte(_ byte: UInt8) -> Bool {
            isLetter(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "+-.".utf8.contains(byte)
        }
        func isAuthorityByte(_ byte: UInt8) -> Bool {
            isSchemeByte(byte) || ":[]%_~".utf8.contains(byte)
        }
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var copied = 0
        var colon = 0
        while let found = bytes[colon...].firstIndex(of: UInt8(ascii: ":")) {
            colon = found + 1
            let rest = bytes[colon...]
            let slashes = rest.starts(with: "//".utf8) ? 2 : rest.starts(with: #"\/\/"#.utf8) ? 4 : 0
            guard slashes > 0 else { continue }
            var start = found
            while start > copied, isSchemeByte(bytes[start - 1]) { start -= 1 }
            guard start < found, isLetter(bytes[start]) else { continue }
            let host = colon + slashes
            var end = host
            while end < bytes.count, isAuthorityByte(bytes[end]) { end += 1 }
            guard end > host, end == bytes.count || bytes[end] != UInt8(ascii: "@"),
                  let named = Origin(String(decoding: bytes[start..<found], as: UTF8.self) + "://"
                      + String(decoding: bytes[host..<end], as: UTF8.self)),
                  named.isSame(as: api) else { continue }
            result += bytes[copied..<start]
            result += slashes == 2 ? plain : escaped
            copied = end
            colon = end
        }
        result += bytes[copied...]
        return result
    }
}
