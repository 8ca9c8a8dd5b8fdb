import AsyncHTTPClient
import Crypto
import Foundation
import MirrorFiles
import MirrorModel
import NIOCore
import NIOHTTP1
import Synchronization

extension HTTPClient {
    /// What a download wrote.
    package struct Download: Sendable {
        package let status: Int
        /// Header names lowercased.
        package let headers: [String: String]
        /// Bytes written; 0 unless the status is 2xx.
        package let size: Int
        /// SHA-256 of the bytes written, lowercase hex; empty unless the status is 2xx.
        package let sha256: String
    }

    /// A local write that failed during a download: not the server's fault, not retried.
    struct WriteFailure: Error {
        package let reason: String
    }

    /// Streams a 2xx response body into `descriptor` (a file open for writing) from its
    /// first byte (written at offsets, whatever the descriptor's own), hashing it on the
    /// way; any other status writes nothing. A body over `request.maxBytes` is
    /// abandoned, and so is a response that `watchdog` (running meanwhile) finds stalled or
    /// too slow.
    /// What was written before an error is the caller's to remove. Redirects are followed
    /// as for pages (see `Redirects`).
    /// A 401 to a fetched token is asked once more with a fresh one, as `send` does.
    package func download(_ request: HTTPRequest, to descriptor: Int32,
                          watchdog: DownloadWatchdog) async throws(HTTPError) -> Download {
        try await authorized(request) { (request) throws(HTTPError) in
            let download = try await downloadOnce(request, to: descriptor, watchdog: watchdog)
            return (download, download.status)
        }
    }

    private func downloadOnce(_ request: HTTPRequest, to descriptor: Int32,
                              watchdog: DownloadWatchdog) async throws(HTTPError) -> Download {
        var status: Int?
        do {
            var redirects = Redirects(request)
            for _ in 0...Redirects.limit {
                var headers = try Self.headers(for: redirects, shownURL: request.url)
                var url = redirects.url
                redirects.credential?.apply(method: redirects.method, url: &url, headers: &headers, body: redirects.body)
                let outgoing = try AsyncHTTPClient.HTTPClient.Request(
                    url: url, method: HTTPMethod(rawValue: redirects.method), headers: headers,
                    body: redirects.body.map { .bytes($0) })
                let sink = FileSink(descriptor: descriptor, maxBytes: request.maxBytes, watchdog: watchdog)
                let task = Self.shared.execute(request: outgoing, delegate: sink)
                defer { watchdog.unwatch(sink) }
                let received: FileSink.Received
                do {
                    received = try await withTaskCancellationHandler {
                        try await task.futureResult.get()
                    } onCancel: {
                        task.cancel()
                    }
                } catch {
                    let head = sink.head
                    if head.status != 0 { status = head.status }
                    // An error page or a redirect's body too long to read: its head says enough.
                    guard error is FileSink.Unwanted else { throw error }
                    received = head
                }
                status = received.status
                if Redirects.isRedirect(status: received.status, location: received.headers["location"]),
                   let location = received.headers["location"] {
                    try redirects.follow(status: received.status, location: location)
                    continue
                }
                return Download(status: received.status, headers: received.headers, size: received.size,
                                sha256: received.sha256)
            }
            throw Redirects.tooMany
        } catch {
            throw Self.failure(error, request, status: status, what: "file")
        }
    }
}

/// Receives one response of a download on its connection's event loop, where the client
/// library calls it: a 2xx body is hashed and written to the file there, piece by piece as
/// it arrives, each at its offset. Writing on the event loop is the one place mirror does
/// blocking I/O there, kept because it pays: a write into the page cache takes microseconds,
/// while handing each piece to a thread pool and back cost more than the write (2,000 files
/// of 100 KB on tmpfs, median of 9: 0.47 s and 0.76 s of CPU against 0.53 s and 0.82 s
/// through NIO's pool; 3,600 context switches against 8,200). A disk that cannot keep up
/// slows the connections of its loop, as it would slow them through the pool. Any other body is read
/// and dropped (up to 1 MB), so that its connection serves the next request. The job's
/// `DownloadWatchdog` watches it from its request's head on, and fails it when it stalls or
/// runs too slowly.
final class FileSink: HTTPClientResponseDelegate {
    package struct Received: Sendable {
        package var status = 0
        /// Header names lowercased.
        package var headers: [String: String] = [:]
        package var size = 0
        package var sha256 = ""
    }

    typealias LibraryTask = AsyncHTTPClient.HTTPClient.Task<Received>

    /// An unwanted body longer than is worth reading.
    struct Unwanted: Error {}

    private struct State {
        var received = Received()
        var hash = Crypto.SHA256()
        var wanted = false
        var lastBeat: RunClock.Instant
        /// When the response's head arrived: the body's rate is measured from there.
        var started: RunClock.Instant?
    }

    private static let unwantedLimit = 1 << 20

    private let descriptor: Int32
    private let maxBytes: Int
    private let watchdog: DownloadWatchdog
    private let clock: RunClock
    /// Taken on the task's event loop, one callback at a time, and by the watchdog; the
    /// lock makes the class safely shareable, as the client library requires.
    private let state: Mutex<State>

    init(descriptor: Int32, maxBytes: Int, watchdog: DownloadWatchdog) {
        self.descriptor = descriptor
        self.maxBytes = maxBytes
        self.watchdog = watchdog
        clock = watchdog.clock
        state = Mutex(State(lastBeat: clock.now))
    }

    /// When the last piece (or the head) arrived, when the head did, and the bytes received.
    var progress: (lastBeat: RunClock.Instant, started: RunClock.Instant?, size: Int) {
        state.withLock { ($0.lastBeat, $0.started, $0.received.size) }
    }

    /// The status and headers received, before any body.
    package var head: Received {
        state.withLock { state in Received(status: state.received.status, headers: state.received.headers) }
    }

    func didSendRequestHead(task: LibraryTask, _ head: HTTPRequestHead) {
        let now = clock.now
        state.withLock { $0.lastBeat = now }
        watchdog.watch(self, task: task)
    }

    func didReceiveHead(task: LibraryTask, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let status = Int(head.status.code)
        let wanted = (200..<300).contains(status)
        let now = clock.now
        state.withLock { state in
            state.lastBeat = now
            state.started = state.lastBeat
            state.received.status = status
            state.received.headers = HTTPClient.headers(head.headers)
            state.wanted = wanted
        }
        // An announced length over the cap fails before any of the body is read.
        if wanted, let length = head.headers.first(name: "content-length").flatMap(Int.init), length > maxBytes {
            return task.eventLoop.makeFailedFuture(NIOTooManyBytesError(maxBytes: maxBytes))
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: LibraryTask, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let now = clock.now
        do {
            // Where the piece goes in the file; nil for a body that is not kept.
            let offset = try state.withLock { state throws -> Int? in
                state.lastBeat = now
                let offset = state.received.size
                state.received.size += buffer.readableBytes
                guard state.wanted else {
                    if state.received.size > Self.unwantedLimit { throw Unwanted() }
                    return nil
                }
                if state.received.size > maxBytes { throw NIOTooManyBytesError(maxBytes: maxBytes) }
                buffer.withUnsafeReadableBytes { state.hash.update(bufferPointer: $0) }
                return offset
            }
            // The client reads no more of the body until this returns: one write at a time,
            // in order, and a slow disk slows the connection down rather than memory up.
            if let offset { try Self.write(buffer, to: descriptor, at: offset) }
        } catch {
            return task.eventLoop.makeFailedFuture(error)
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveError(task: LibraryTask, _ error: any Error) {
        watchdog.unwatch(self)
    }

    func didFinishRequest(task: LibraryTask) throws -> Received {
        watchdog.unwatch(self)
        return state.withLock { state in
            guard state.wanted else { return Received(status: state.received.status, headers: state.received.headers) }
            var received = state.received
            received.sha256 = Hex.string(state.hash.finalize())
            return received
        }
    }

    /// Writes all of `bytes` to `descriptor` at `offset`.
    private static func write(_ bytes: ByteBuffer, to descriptor: Int32, at offset: Int) throws {
        try bytes.withUnsafeReadableBytes { bytes in
            guard bytes.baseAddress != nil else { return }
            do throws(FileError) {
                try FileSystem.write(bytes, to: descriptor, at: offset)
            } catch {
                throw HTTPClient.WriteFailure(reason: error.reason)
            }
        }
    }
}
