import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import MirrorJSON
import MirrorModel
import MirrorStore
import NIOCore

/// The mirrored API, answered offline: a request for a page a run stored gets the page's
/// envelope with its records put back as the table holds them now, and the envelope's URLs
/// of the API pointing to this server. Secrets are not needed (see `PageRequest`) and never
/// sent: the envelope was stored with them masked. A page no larger than `chunk` is kept as
/// it was assembled (`PageCache`) and sent again from there while nothing it is made of has
/// changed.
///
/// Whether anything was committed to the folder's databases since an answer was kept is
/// asked on the request's own task, not on the thread pool SQLite's other work runs on:
/// a `readdir` of the output folder, a `stat` and a `PRAGMA data_version` per database,
/// which read the file system's and SQLite's shared memory and wait for no disk. Measured
/// with `perf` under `scripts/bench/bench-serve.sh`: 12% of serve's CPU, about 30 µs of the
/// 240 µs a kept page's answer costs in all, most of which is Hummingbird's and NIO's.
package struct ReplayedPages: Sendable {
    /// An answer to a request for a page.
    enum Answer: Sendable {
        /// Held whole: a 304 or a 404.
        case whole(ReadAPI.Answer)
        /// A page no larger than `chunk`, as it is kept in the cache.
        case kept(PageCache.Entry)
        /// A larger page: `first` is sent, then the records from `cursor` on, a `piece` at a
        /// time in the page's read transaction, then `last`.
        case streamed(status: Int, headers: [(String, String)], first: [UInt8], page: FoundPage,
                      cursor: FoundPage.Cursor, last: [UInt8])
    }

    /// The largest request body a replayed POST may send.
    static let maxRequestBody = 1 << 20

    /// Bytes of records a page may hold to be answered whole (with a `Content-Length`).
    static let chunk = 1 << 18

    /// Bytes of records a larger page reads at a time: what its answer holds in memory at
    /// once, besides its envelope, its ids and what the connection buffers. A piece ends
    /// after the record that reaches it: 48 KB leaves room for records of up to 16 KB in the
    /// 64 KB buffer it is sent in (NIO rounds a buffer's capacity up to a power of two).
    static let piece = 48 << 10

    package let output: String
    let connections = ReadConnections.pages()
    let cache: PageCache
    let watcher: CommitWatcher

    init(output: String, cache: PageCache) {
        self.output = output
        self.cache = cache
        watcher = CommitWatcher(output: output)
    }

    /// The answer to `method target` (`/items?page=2`) with `body`, for a client that
    /// reaches this server at `origin` (`http://127.0.0.1:8080`). With `moment`, the moment
    /// of the databases before this answer reads them, a page is kept in the cache, or sent
    /// from it when its ETag is the one it was kept with.
    func answer(method: String, target: String, body: [UInt8], origin: String, ifNoneMatch: String?,
                moment: CommitWatcher.Moment? = nil) throws -> Answer {
        let request = PageRequest(url: target)
        let page: FoundPage
        switch try PageLookup.find(request, body: body, in: output, connections: connections) {
        case let .found(found):
            page = found
        case let .missing(closest):
            var text = Array("{\"error\":".utf8)
            JSONText.appendQuoted("the mirror holds no page for \(method) \(target)", to: &text)
            text.append(contentsOf: ",\"closest\":[".utf8)
            for (index, known) in closest.enumerated() {
                if index > 0 { text.append(UInt8(ascii: ",")) }
                JSONText.appendQuoted(known, to: &text)
            }
            text.append(contentsOf: "]}\n".utf8)
            return .whole(ReadAPI.Answer(status: 404, body: text))
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
            return .kept(entry)
        }
        if EntityTags.match(ifNoneMatch, etag) {
            page.finish()
            return .whole(ReadAPI.Answer(status: 304, body: [], headers: headers.filter { $0.0 != "content-type" }))
        }
        guard page.envelope.recordsAt != nil else {
            page.finish()
            return .kept(keep(ReadAPI.Answer(status: page.status, body: head, headers: headers), etag: etag, for: key, at: moment))
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
            return .streamed(status: page.status, headers: headers, first: first, page: page, cursor: FoundPage.Cursor(),
                             last: last)
        }
        page.finish()
        return .kept(keep(ReadAPI.Answer(status: page.status, body: whole + last, headers: headers), etag: etag, for: key, at: moment))
    }

    /// `answer` as the cache holds it, kept there when assembled at a known `moment`.
    private func keep(_ answer: ReadAPI.Answer, etag: String, for key: PageCache.Key, at moment: CommitWatcher.Moment?)
        -> PageCache.Entry {
        let entry = PageCache.Entry(status: answer.status, fields: answer.fields, etag: etag,
                                    body: PageCache.Entry.buffer(answer.body), moment: moment)
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

    /// The answer to `request`, for a client that reaches this server at `origin`: the page
    /// the mirror holds for it. `loop` is the connection's event loop (see `MirrorServer.taken`).
    func response(to request: Request, origin: String, loop: any EventLoop) async throws -> Response {
        var request = request
        var body: [UInt8] = []
        if request.method == .post {
            do {
                body = Array(try await request.collectBody(upTo: Self.maxRequestBody).readableBytesView)
            } catch is NIOTooManyBytesError {
                throw HTTPError(.contentTooLarge, message: "a request body may hold \(Self.maxRequestBody >> 20) MB at most")
            }
        }
        let (method, target, ifNoneMatch) = (request.method.rawValue, request.uri.string, request.headers[.ifNoneMatch])
        let moment = cache.limit > 0 ? watcher.moment() : nil
        if let moment, let entry = cache.entry(PageCache.Key(target: target, body: body, origin: origin), at: moment) {
            return entry.response(ifNoneMatch: ifNoneMatch)
        }
        let answer = try await MirrorServer.blocking { [body] in
            try self.answer(method: method, target: target, body: body, origin: origin, ifNoneMatch: ifNoneMatch, moment: moment)
        }
        return await Self.response(answer, head: request.method == .head, ifNoneMatch: ifNoneMatch, loop: loop)
    }

    /// A replayed page: whole, or its records read a piece at a time on the thread pool, in
    /// the page's read transaction, between the envelope's two halves. The next piece is read
    /// only once the connection has taken the last: a response holds one piece and what the
    /// connection buffers (NIO's high-water mark, 64 KB) at most, whatever the client reads.
    /// `loop` is the connection's event loop (see `MirrorServer.taken`).
    private static func response(_ answer: ReplayedPages.Answer, head: Bool, ifNoneMatch: String?,
                                 loop: any EventLoop) async -> Response {
        switch answer {
        case let .whole(answer):
            return answer.response
        case let .kept(entry):
            return entry.response(ifNoneMatch: ifNoneMatch)
        case let .streamed(status, headers, first, page, cursor, last):
            var fields = HTTPFields()
            fields[.contentType] = "application/json"
            for (name, value) in headers {
                if let name = HTTPField.Name(name) { fields[name] = value }
            }
            // The read transaction ends on the thread pool, however the answer ends.
            let finish: @Sendable () async -> Void = { _ = try? await MirrorServer.blocking { page.finish() } }
            if head {
                await finish()
                return Response(status: .init(code: status), headers: fields, body: ResponseBody())
            }
            let body = ResponseBody { writer in
                do {
                    try await writer.write(ByteBuffer(bytes: first))
                    var cursor = cursor
                    while !cursor.done {
                        try await MirrorServer.taken(by: &writer, on: loop)
                        let read = try await MirrorServer.blocking { [cursor] () throws -> (ByteBuffer, FoundPage.Cursor) in
                            var next = cursor
                            var piece: [UInt8] = []
                            piece.reserveCapacity(1 << 16)
                            try page.read(&next, into: &piece, budget: ReplayedPages.piece)
                            return (ByteBuffer(bytes: piece), next)
                        }
                        try await writer.write(read.0)
                        cursor = read.1
                    }
                    try await writer.write(ByteBuffer(bytes: last))
                } catch {
                    await finish()
                    throw error
                }
                await finish()
                try await writer.finish(nil)
            }
            return Response(status: .init(code: status), headers: fields, body: body)
        }
    }
}
