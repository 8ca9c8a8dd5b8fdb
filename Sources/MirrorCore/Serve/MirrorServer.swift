import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import MirrorDownload
import MirrorHTTP
import MirrorJobFile
import MirrorModel
import MirrorStore
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import UnixSignals

/// `mirror serve`: an HTTP server answering from an output folder, read-only, offline. The
/// API's own URLs (`ReplayedPages`), a status page at `/`, the read API (`/_mirror/tables`,
/// `/_mirror/tables/<table>`, `/_mirror/changes/<table>`, `/_mirror/status`) and the
/// downloaded files (`/_mirror/files/<path>`). Databases are read through read-only
/// connections (kept between requests for pages and files), one read transaction per
/// answer, with no lock taken: a run writing meanwhile is never blocked and never seen
/// half-done. SQLite's work runs on NIO's thread pool for blocking
/// work, never on the tasks that serve connections.
public struct MirrorServer: Sendable {
    public struct Options: Sendable {
        public var output: String
        public var jobFiles: [JobFile] = []
        public var bind = "127.0.0.1"
        public var port = 8080
        /// A connection that sends nothing for this long, before its first request or between
        /// two, is closed.
        public var idleTimeout: Duration = .seconds(60)
        /// A request's head must be whole this long after its first byte.
        public var headerTimeout: Duration = .seconds(10)
        /// A client that takes none of the bytes waiting for it for this long is dropped.
        public var sendTimeout: Duration = .seconds(30)
        /// How long a stop waits for the responses in flight before it cuts them.
        public var stopGrace: Duration = .seconds(10)

        public init(output: String) {
            self.output = output
        }
    }

    /// The address could not be listened on (taken, not an address of this machine).
    public struct ListenFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A file grew shorter while it was sent: the response is cut, as its length said more.
    struct FileEndedEarly: Error {}

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    /// How a server stopped.
    public enum Stop: Sendable, Equatable {
        /// By a signal: the responses in flight ended, or were cut when `stopGrace` ran out.
        case graceful
        /// By a second signal, which cut every response at once.
        case forced(signal: Int32)
    }

    /// Serves until SIGTERM, SIGINT or SIGHUP. The first signal closes the listening socket
    /// and the idle connections and lets the responses in flight end, for `stopGrace` at
    /// most, then cuts them; a second signal cuts them at once. `listening` gets the port
    /// once the server listens.
    public func run(logger: Logger, listening: @escaping @Sendable (Int) -> Void = { _ in }) async throws -> Stop {
        let connections = OpenConnections()
        let app = application(logger: logger, connections: connections, listening: listening)
        let services = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint, .sighup)
        let grace = options.stopGrace
        return try await withThrowingTaskGroup(of: Int32?.self) { group in
            group.addTask {
                try await listenFailures { try await services.run() }
                return nil
            }
            group.addTask {
                // Ends, with the signal that forced the stop if one did, when the server has stopped.
                await withTaskGroup(of: Void.self) { timers in
                    var stopping = false
                    for await signal in signals {
                        if stopping {
                            connections.closeAll()
                            timers.cancelAll()
                            return signal.rawValue
                        }
                        stopping = true
                        await services.triggerGracefulShutdown()
                        timers.addTask {
                            guard (try? await Task.sleep(for: grace)) != nil else { return }
                            connections.closeAll()
                        }
                    }
                    timers.cancelAll()
                    return nil
                }
            }
            var forced: Int32?
            // The server ends first (the signals never do by themselves); then the signals stop being awaited.
            if let signal = try await group.next() ?? nil { forced = signal }
            group.cancelAll()
            while let value = try await group.next() {
                if let value { forced = value }
            }
            return forced.map { .forced(signal: $0) } ?? .graceful
        }
    }

    /// Serves while `body` runs (given the port), then shuts down gracefully: the responses
    /// still being sent `stopGrace` later are cut.
    public func with<T: Sendable>(logger: Logger, _ body: (Int) async throws -> T) async throws -> T {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let connections = OpenConnections()
        let app = application(logger: logger, connections: connections) { port in
            continuation.yield(port)
            continuation.finish()
        }
        let services = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let grace = options.stopGrace
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // A server that never listens (the port is taken) ends the wait for its port.
                defer { continuation.finish() }
                try await listenFailures { try await services.run() }
            }
            var port: Int?
            for await value in ports { port = value }
            guard let port else {
                try await group.waitForAll()
                throw ListenFailure(description: "the server stopped before it listened")
            }
            let outcome: Result<T, any Error>
            do {
                outcome = .success(try await body(port))
            } catch {
                outcome = .failure(error)
            }
            await services.triggerGracefulShutdown()
            let timer = Task {
                guard (try? await Task.sleep(for: grace)) != nil else { return }
                connections.closeAll()
            }
            defer { timer.cancel() }
            try await group.waitForAll()
            return try outcome.get()
        }
    }

    /// A failure to bind, said as such.
    private func listenFailures(_ work: () async throws -> Void) async throws {
        do {
            try await work()
        } catch let error as IOError {
            let reason = error.errnoCode == EADDRINUSE
                ? "the port is taken: another program listens on it (--port another one, or 0 for any free one)"
                : String(cString: strerror(error.errnoCode))
            throw ListenFailure(description: "cannot listen on \(options.bind):\(options.port): \(reason)")
        } catch let error as SocketAddressError {
            throw ListenFailure(description: "cannot listen on \(options.bind):\(options.port): \(error)")
        }
    }

    private func application(logger: Logger, connections: OpenConnections, listening: @escaping @Sendable (Int) -> Void)
        -> Application<CallbackResponder<ServeContext>> {
        let api = ReadAPI(output: options.output, jobFiles: options.jobFiles)
        let files = ServedFiles(output: options.output)
        let pages = ReplayedPages(output: options.output)
        let bind = options.bind
        let address = ServerAddress(bind: bind, port: options.port)
        let responder = CallbackResponder<ServeContext> { request, context in
            try await Self.respond(to: request, api: api, files: files, pages: pages, address: address,
                                   loop: context.eventLoop)
        }
        let (idle, header, send) = (options.idleTimeout, options.headerTimeout, options.sendTimeout)
        let server = HTTPServerBuilder { responder in
            GuardedHTTP1Channel(responder: responder, idle: idle, header: header, send: send, connections: connections)
        }
        return Application(
            responder: responder,
            server: server,
            configuration: .init(address: .hostname(options.bind, port: options.port), serverName: "mirror",
                                 availableConnectionsDelegate: MaximumAvailableConnections(Self.connectionLimit(), logger: logger)),
            onServerRunning: { channel in
                // Out of file descriptors (EMFILE), accepting waits a second before it tries
                // again, instead of trying at once, and forever, while the error lasts.
                try? await channel.eventLoop.submit {
                    try channel.pipeline.syncOperations.addHandler(
                        AcceptBackoffHandler(shouldForwardIOErrorCaught: false), position: .first)
                }.get()
                address.listening(on: channel.localAddress?.port ?? 0)
                listening(channel.localAddress?.port ?? 0)
            },
            logger: logger)
    }

    /// File descriptors kept for the databases, files and the server itself, of the
    /// process's limit (`ulimit -n`), at least: a connection past the rest waits to be
    /// accepted until another one closes.
    static let reservedDescriptors = 32

    /// The connections served at once: the limit on open files less what the server keeps
    /// for itself (a quarter of it, at least `reservedDescriptors`), at most 16,384.
    static func connectionLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        // RLIM_INFINITY is the largest value: clamped to Int.max.
        let open = Int(clamping: limit.rlim_cur)
        let reserved = max(reservedDescriptors, open / 4)
        return min(16_384, max(1, open - reserved))
    }

    static let prefix = "/_mirror/"

    /// The largest request body a replayed POST may send.
    static let maxRequestBody = 1 << 20

    private static func respond(to request: Request, api: ReadAPI, files: ServedFiles, pages: ReplayedPages,
                                address: ServerAddress, loop: any EventLoop) async throws -> Response {
        let bind = address.bind
        /// On a loopback address, a request must name this machine: a web page whose name
        /// was made to point to 127.0.0.1 (DNS rebinding) gets nothing.
        func allowed(host authority: String?) -> Bool {
            guard ["127.0.0.1", "localhost", "::1"].contains(bind) || bind.hasPrefix("127.") else { return true }
            guard let authority else { return true }
            var host = Substring(authority)
            if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
                host = host[host.index(after: host.startIndex)..<close]
            } else if let colon = host.lastIndex(of: ":") {
                host = host[..<colon]
            }
            return ["localhost", "127.0.0.1", "::1", bind].contains(host.lowercased())
        }
        guard allowed(host: request.head.authority) else {
            return response(.error("this server answers requests for \(bind) and localhost only", status: 403))
        }
        let path = request.uri.path
        let own = path.hasPrefix(prefix) || (path == "/" && (request.uri.query ?? "").isEmpty)
        let methods: [HTTPTypes.HTTPRequest.Method] = own ? [.get, .head] : [.get, .head, .post]
        guard methods.contains(request.method) else {
            let names = methods.map(\.rawValue).joined(separator: ", ")
            var answer = ReadAPI.Answer.error("only \(names) are served here", status: 405)
            answer.headers = [("Allow", names)]
            return response(answer)
        }
        guard own else {
            var request = request
            let body = request.method == .post ? Array(try await request.collectBody(upTo: maxRequestBody).readableBytesView) : []
            let origin = address.origin(asked: request.head.authority)
            let method = request.method.rawValue
            let target = request.uri.string
            let ifNoneMatch = request.headers[.ifNoneMatch]
            let answer = try await blocking {
                try pages.answer(method: method, target: target, body: body, origin: origin, ifNoneMatch: ifNoneMatch)
            }
            return await replayed(answer, head: request.method == .head, loop: loop)
        }
        var parameters: [String: String] = [:]
        for (key, value) in request.uri.queryParameters { parameters[String(key)] = String(value) }
        let query = parameters
        if path == "/" { return response(try await blocking { try api.statusPage() }) }
        let rest = String(path.dropFirst(prefix.count))
        let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let name = parts.count > 1 ? parts[1].removingPercentEncoding : nil
        switch parts[0] {
        case "status" where parts.count == 1:
            return response(try await blocking { try api.status() })
        case "tables" where parts.count == 1:
            return response(try await blocking { try api.tables() })
        case "tables":
            guard let name, !name.contains("/") else { break }
            return response(try await blocking { try api.records(table: name, query: query, path: path) })
        case "changes":
            guard let name, !name.contains("/") else { break }
            return response(try await blocking { try api.changes(table: name, query: query) })
        case "files":
            guard let name else { break }
            let range = request.headers[.range]
            let ifNoneMatch = request.headers[.ifNoneMatch]
            let served = try await blocking {
                try files.serve(FileNaming.folder + "/" + name, range: range, ifNoneMatch: ifNoneMatch)
            }
            return stream(served, head: request.method == .head, loop: loop)
        default:
            break
        }
        return response(.error("no such path: '\(path)'", status: 404))
    }

    /// SQLite's and the file system's blocking work, off the tasks that serve connections.
    private static func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(work)
    }

    private static func response(_ answer: ReadAPI.Answer) -> Response {
        var fields = HTTPFields()
        if answer.status != 304 { fields[.contentType] = answer.contentType }
        for (name, value) in answer.headers {
            if let name = HTTPField.Name(name) { fields[name] = value }
        }
        return Response(status: .init(code: answer.status), headers: fields,
                        body: answer.status == 304 ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    /// A replayed page: whole, or its records read a piece at a time on the thread pool, in
    /// the page's read transaction, between the envelope's two halves. The next piece is read
    /// only once the connection has taken the last: a response holds one piece and what the
    /// connection buffers (NIO's high-water mark, 64 KB) at most, whatever the client reads.
    /// `loop` is the connection's event loop (see `taken`).
    private static func replayed(_ answer: ReplayedPages.Answer, head: Bool, loop: any EventLoop) async -> Response {
        switch answer {
        case let .whole(answer):
            return response(answer)
        case let .streamed(status, headers, first, page, cursor, last):
            var fields = HTTPFields()
            fields[.contentType] = "application/json"
            for (name, value) in headers {
                if let name = HTTPField.Name(name) { fields[name] = value }
            }
            // The read transaction ends on the thread pool, however the answer ends.
            let finish: @Sendable () async -> Void = { _ = try? await blocking { page.finish() } }
            if head {
                await finish()
                return Response(status: .init(code: status), headers: fields, body: ResponseBody())
            }
            let body = ResponseBody { writer in
                do {
                    try await writer.write(ByteBuffer(bytes: first))
                    var cursor = cursor
                    while !cursor.done {
                        try await taken(by: &writer, on: loop)
                        let read = try await blocking { [cursor] () throws -> (ByteBuffer, FoundPage.Cursor) in
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

    /// A file's bytes, read 64 KB at a time on the thread pool, the next once the connection
    /// has taken the last (see `replayed`): memory stays bounded whatever the file's size
    /// and however slowly the client reads. A HEAD request gets the headers alone.
    private static func stream(_ served: ServedFiles.Served, head: Bool, loop: any EventLoop) -> Response {
        switch served {
        case let .answer(answer):
            return response(answer)
        case let .file(file, range, _, status, headers):
            var fields = HTTPFields()
            for (name, value) in headers {
                if let name = HTTPField.Name(name) { fields[name] = value }
            }
            if head {
                fields[.contentLength] = String(range.count)
                return Response(status: .init(code: status), headers: fields, body: ResponseBody())
            }
            let body = ResponseBody(contentLength: range.count) { writer in
                var offset = range.lowerBound
                while offset < range.upperBound {
                    try await taken(by: &writer, on: loop)
                    let wanted = min(1 << 16, range.upperBound - offset)
                    let start = offset
                    let chunk = try await blocking { () throws -> [UInt8] in
                        var buffer = [UInt8](repeating: 0, count: wanted)
                        let read = buffer.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, wanted, off_t(start)) }
                        guard read > 0 else { throw FileEndedEarly() }
                        return Array(buffer.prefix(read))
                    }
                    try await writer.write(ByteBuffer(bytes: chunk))
                    offset += chunk.count
                }
                try await writer.finish(nil)
            }
            return Response(status: .init(code: status), headers: fields, body: body)
        }
    }
}

extension MirrorServer {
    /// Returns once the connection has taken what was written to `writer` and will take
    /// more. A write reaches the connection's event loop `loop` later, in order: once a task
    /// submitted there has run, the writes before it have, and the writer knows whether the
    /// connection is full; then an empty write (NIO frames no empty chunk: it sends nothing)
    /// waits while it is. Without the hop, a busy event loop would let a response read its
    /// next pieces before the last reached the connection, and hold them all.
    static func taken(by writer: inout any ResponseBodyWriter, on loop: any EventLoop) async throws {
        try await loop.submit {}.get()
        try await writer.write(ByteBuffer())
    }
}

/// What a request of `mirror serve` knows of its connection: Hummingbird's own, and the
/// connection's event loop, which a streamed answer waits on between pieces.
struct ServeContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let eventLoop: any EventLoop

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        eventLoop = source.channel.eventLoop
    }
}

/// The address the server listens on, and the origin a client reached it at.
final class ServerAddress: Sendable {
    let bind: String
    private let port: Mutex<Int>

    init(bind: String, port: Int) {
        self.bind = bind
        self.port = Mutex(port)
    }

    func listening(on port: Int) {
        self.port.withLock { $0 = port }
    }

    /// `http://` and the request's `Host` when it is a host name or address with an
    /// optional port, else the address listened on: a `Host` is put into answers' URLs,
    /// so nothing else of it is.
    func origin(asked authority: String?) -> String {
        if let authority, Self.isPlainAuthority(authority) { return "http://" + authority }
        let host = bind.contains(":") ? "[\(bind)]" : bind
        return "http://\(host):\(port.withLock { $0 })"
    }

    static func isPlainAuthority(_ text: String) -> Bool {
        var host = Substring(text)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            let inside = host[host.index(after: host.startIndex)..<close]
            guard !inside.isEmpty, inside.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return false }
            host = host[host.index(after: close)...]
        } else {
            let end = host.firstIndex(of: ":") ?? host.endIndex
            let name = host[..<end]
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }) else {
                return false
            }
            host = host[end...]
        }
        guard !host.isEmpty else { return true }
        let digits = host.dropFirst()
        return host.first == ":" && !digits.isEmpty && digits.count <= 5 && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }
}
