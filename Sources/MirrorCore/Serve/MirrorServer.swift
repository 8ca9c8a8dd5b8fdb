import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

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

    /// Serves until SIGTERM, SIGINT or SIGHUP, then lets the requests in flight finish.
    /// `listening` gets the port once the server listens.
    public func run(logger: Logger, listening: @escaping @Sendable (Int) -> Void = { _ in }) async throws {
        let app = application(logger: logger, listening: listening)
        let services = ServiceGroup(configuration: .init(
            services: [app], gracefulShutdownSignals: [.sigterm, .sigint, .sighup], logger: logger))
        try await listenFailures { try await services.run() }
    }

    /// Serves while `body` runs (given the port), then shuts down gracefully.
    public func with<T: Sendable>(logger: Logger, _ body: (Int) async throws -> T) async throws -> T {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = application(logger: logger) { port in
            continuation.yield(port)
            continuation.finish()
        }
        let services = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
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

    private func application(logger: Logger, listening: @escaping @Sendable (Int) -> Void)
        -> Application<CallbackResponder<BasicRequestContext>> {
        let api = ReadAPI(output: options.output, jobFiles: options.jobFiles)
        let files = ServedFiles(output: options.output)
        let pages = ReplayedPages(output: options.output)
        let bind = options.bind
        let address = ServerAddress(bind: bind, port: options.port)
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            try await Self.respond(to: request, api: api, files: files, pages: pages, address: address)
        }
        return Application(
            responder: responder,
            configuration: .init(address: .hostname(options.bind, port: options.port), serverName: "mirror"),
            onServerRunning: { channel in
                address.listening(on: channel.localAddress?.port ?? 0)
                listening(channel.localAddress?.port ?? 0)
            },
            logger: logger)
    }

    static let prefix = "/_mirror/"

    /// The largest request body a replayed POST may send.
    static let maxRequestBody = 1 << 20

    private static func respond(to request: Request, api: ReadAPI, files: ServedFiles, pages: ReplayedPages,
                                address: ServerAddress) async throws -> Response {
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
            return await replayed(answer, head: request.method == .head)
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
            return stream(served, head: request.method == .head)
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

    /// A replayed page: whole, or its records read a chunk at a time on the thread pool, in
    /// the page's read transaction, between the envelope's two halves.
    private static func replayed(_ answer: ReplayedPages.Answer, head: Bool) async -> Response {
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
                        let read = try await blocking { [cursor] () throws -> ([UInt8], FoundPage.Cursor) in
                            var next = cursor
                            var chunk: [UInt8] = []
                            try page.read(&next, into: &chunk, budget: ReplayedPages.chunk)
                            return (chunk, next)
                        }
                        try await writer.write(ByteBuffer(bytes: read.0))
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

    /// A file's bytes, read 64 KB at a time on the thread pool: memory stays bounded
    /// whatever the file's size. A HEAD request gets the headers alone.
    private static func stream(_ served: ServedFiles.Served, head: Bool) -> Response {
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
