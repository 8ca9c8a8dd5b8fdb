import Foundation
import Hummingbird
import HummingbirdCore
package import Logging
package import MirrorExport
package import MirrorModel
import MirrorReplay
import NIOCore
import ServiceLifecycle
import Synchronization
import UnixSignals

/// `mirror serve`: an HTTP server answering from an output folder, read-only, offline. The
/// API's own URLs (`ReplayedPages`), a status page at `/`, the read API (`/_mirror/tables`,
/// `/_mirror/tables/<table>`, `/_mirror/changes/<table>`, `/_mirror/status`), the
/// downloaded files (`/_mirror/files/<path>`) and, when asked for, `/metrics`, routed by Hummingbird's router (see
/// `router`) on connections held to time limits (`GuardedHTTP1Channel`). Databases are
/// read through read-only connections (kept between requests for pages and files), one
/// read transaction per answer, with no lock taken: a run writing meanwhile is never
/// blocked and never seen half-done. SQLite's work runs on NIO's thread pool for blocking
/// work, never on the tasks that serve connections.
package struct MirrorServer: Sendable {
    package struct Options: Sendable {
        package var output: String
        package var jobFiles: [JobFile] = []
        package var bind = "127.0.0.1"
        package var port = 8080
        /// A connection that sends nothing for this long, before its first request or between
        /// two, is closed.
        package var idleTimeout: Duration = .seconds(60)
        /// A request's head must be whole this long after its first byte.
        package var headerTimeout: Duration = .seconds(10)
        /// A client that takes none of the bytes waiting for it for this long is dropped.
        package var sendTimeout: Duration = .seconds(30)
        /// How long a stop waits for the responses in flight before it cuts them.
        package var stopGrace: Duration = .seconds(10)
        /// Bytes of replayed pages kept as they were assembled, to be sent again while
        /// nothing they are made of changes (see `PageCache`); 0 keeps none.
        package var pageCache = MirrorServer.defaultPageCache
        /// The certificate and key to answer TLS with (`https://`), read again on a reload;
        /// none: plain HTTP.
        package var tls: TLSFiles?
        /// The device token file (`DeviceTokens`), read again on a reload; none: every
        /// request is answered, with no token.
        package var deviceTokens: String?
        /// What every answer counts, and what `GET /metrics` answers with; none: nothing is
        /// counted, and `/metrics` is one of the API's paths.
        package var metrics: ServeMetrics?
        /// Whether kept pages and files are answered on the event loop that read their request
        /// (`KeptAnswersOnLoop`), where the server has no TLS, device tokens or metrics; off,
        /// every answer goes through the router, as the tests compare.
        package var answersOnLoop = true

        package init(output: String) {
            self.output = output
        }

        /// Whether a reload (SIGHUP) has files to read again, rather than stopping the server.
        package var reloads: Bool { tls != nil || deviceTokens != nil }
    }

    /// A PEM certificate chain, the server's first, and the PEM private key of its first.
    package struct TLSFiles: Sendable {
        package var certificate: String
        package var key: String

        package init(certificate: String, key: String) {
            self.certificate = certificate
            self.key = key
        }
    }

    /// The address could not be listened on (taken, not an address of this machine), or a
    /// file it needs to serve (the certificate) cannot be used.
    package struct ListenFailure: Error, CustomStringConvertible {
        package let description: String
    }

    package let options: Options
    /// The replayed pages kept as they were assembled, for as long as the server runs.
    let pages: ReplayedPages
    /// The answers `KeptAnswersOnLoop` sent, for the tests.
    let answeredOnLoop = KeptAnswersOnLoop.Count()

    /// The `Server` field of every answer.
    static let serverName = "mirror"

    /// What `Options.pageCache` is unless set: more than the bench's 1,000 pages of 85 KB.
    package static let defaultPageCache = 128 << 20

    package init(options: Options) {
        self.options = options
        pages = ReplayedPages(output: options.output, cache: PageCache(limit: options.pageCache, form: KeptResponse.self))
    }

    /// How a server stopped.
    package enum Stop: Sendable, Equatable {
        /// By a signal: the responses in flight ended, or were cut when `stopGrace` ran out.
        case graceful
        /// By a second signal, which cut every response at once.
        case forced(signal: Int32)
    }

    /// Serves until SIGTERM, SIGINT or SIGHUP (or what `signals` yields), stopped as `run`,
    /// `verify` and `snapshot` are (`GracefulStop`). The first signal closes the listening
    /// socket and the idle connections and lets the responses in flight end, for `stopGrace`
    /// at most, then cuts them; a second signal cuts them at once. `listening` gets the port
    /// once the server listens. Each element of `reloads` reads the certificate and key
    /// and the device tokens again (see `ServedTLS`, `DeviceTokenFile`); the files are read
    /// first, before the server listens.
    package func run(logger: Logger, signals: StopSignals = .process, reloads: AsyncStream<Void>? = nil,
                     listening: @escaping @Sendable (Int) -> Void = { _ in }) async throws -> Stop {
        let tls = try options.tls.map { files throws(ListenFailure) in try ServedTLS(files) }
        let tokens = try options.deviceTokens.map { path throws(ListenFailure) in try DeviceTokenFile(path: path) }
        let connections = OpenConnections()
        let app = application(logger: logger, connections: connections, tls: tls, tokens: tokens, listening: listening)
        let forced = Mutex<Int32?>(nil)
        _ = try await GracefulStop.run(signals, forced: { signal in
            forced.withLock { $0 = $0 ?? signal }
            connections.closeAll()
        }) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                if let reloads {
                    group.addTask {
                        for await _ in reloads {
                            tls?.reload(logger: logger)
                            tokens?.reload(logger: logger)
                        }
                    }
                }
                defer { group.cancelAll() }
                try await serve(app, connections: connections)
            }
        }
        return forced.withLock { $0 }.map { .forced(signal: $0) } ?? .graceful
    }

    /// SIGHUP, each time it comes, for `run`'s `reloads`; trapped from now on, so it no
    /// longer stops the process.
    package static func hangUps() async -> AsyncStream<Void> {
        let trapped = await UnixSignalsSequence(trapping: .sighup)
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        let task = Task {
            for await _ in trapped { continuation.yield() }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Serves while `body` runs (given the port), then shuts down gracefully, as on SIGTERM:
    /// the responses still being sent `stopGrace` later are cut.
    /// Each element of `reloads` reloads, as SIGHUP does.
    package func with<T: Sendable>(logger: Logger, reloads: AsyncStream<Void>? = nil,
                                   _ body: (Int) async throws -> T) async throws -> T {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let (signals, signal) = AsyncStream.makeStream(of: Int32.self)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // A server that never listens (the port is taken) ends the wait for its port.
                defer { continuation.finish() }
                _ = try await run(logger: logger, signals: .stream(signals), reloads: reloads) { port in
                    continuation.yield(port)
                    continuation.finish()
                }
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
            signal.yield(SIGTERM)
            signal.finish()
            try await group.waitForAll()
            return try outcome.get()
        }
    }

    /// Runs `app` until it has stopped: a graceful shutdown (`GracefulStop`'s) closes its
    /// listening socket and idle connections, and `stopGrace` later cuts the responses still
    /// being sent.
    private func serve(_ app: some Service, connections: OpenConnections) async throws {
        let grace = options.stopGrace
        try await withThrowingTaskGroup(of: Void.self) { timer in
            timer.addTask {
                guard (try? await gracefulShutdown()) != nil, (try? await Task.sleep(for: grace)) != nil else { return }
                connections.closeAll()
            }
            defer { timer.cancelAll() }
            try await listenFailures { try await app.run() }
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

    private func application(logger: Logger, connections: OpenConnections, tls: ServedTLS?, tokens: DeviceTokenFile?,
                             listening: @escaping @Sendable (Int) -> Void) -> Application<RouterResponder<ServeContext>> {
        let address = ServerAddress(scheme: tls == nil ? "http" : "https", bind: options.bind, port: options.port)
        let sends = tls == nil ? FileSends() : nil
        let files = ServedFiles(output: options.output, sends: sends, keepingOpen: Self.openedFileLimit())
        let router = Self.router(api: ReadAPI(output: options.output, jobFiles: options.jobFiles), files: files, pages: pages,
                                 address: address, tokens: tokens, metrics: options.metrics, sends: sends)
        let (idle, header, send) = (options.idleTimeout, options.headerTimeout, options.sendTimeout)
        let onLoop = sends.flatMap { sends in
            options.answersOnLoop && tokens == nil && options.metrics == nil && options.pageCache > 0
                ? KeptAnswersOnLoop.Shared(pages: pages, files: files, address: address, sends: sends,
                                           answered: answeredOnLoop) : nil
        }
        let server = HTTPServerBuilder { responder in
            GuardedHTTP1Channel(responder: responder, idle: idle, header: header, send: send, connections: connections, tls: tls,
                                sends: sends, onLoop: onLoop)
        }
        return Application(
            responder: router.buildResponder(),
            server: server,
            configuration: .init(address: .hostname(options.bind, port: options.port), serverName: Self.serverName,
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
    /// for itself (`reserved(of:)`), at most 16,384.
    static func connectionLimit() -> Int {
        let open = openFileLimit()
        return min(16_384, max(1, open - reserved(of: open)))
    }

    /// The downloaded files kept open between answers (`OpenedFiles`): half of what the
    /// server keeps for itself of the limit on open files, at most 1,024.
    static func openedFileLimit() -> Int {
        min(1024, reserved(of: openFileLimit()) / 2)
    }

    /// What the server keeps for itself of `open` descriptors: a quarter, at least
    /// `reservedDescriptors`.
    private static func reserved(of open: Int) -> Int {
        max(reservedDescriptors, open / 4)
    }

    /// The process's limit on open files (`ulimit -n`); 1,024 when it cannot be read.
    private static func openFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        // RLIM_INFINITY is the largest value: clamped to Int.max.
        return Int(clamping: limit.rlim_cur)
    }

    /// Whether `bind` is an address of this machine alone: `localhost`, 127.0.0.0/8 or `::1`.
    /// Anything else (`0.0.0.0`, `::`, another address or a host name) reaches beyond it.
    package static func isLoopback(_ bind: String) -> Bool {
        if bind.lowercased() == "localhost" { return true }
        guard let address = try? SocketAddress(ipAddress: bind, port: 0) else { return false }
        switch address {
        case let .v4(v4):
            return UInt32(bigEndian: v4.address.sin_addr.s_addr) >> 24 == 127
        case let .v6(v6):
            return withUnsafeBytes(of: v6.address.sin6_addr) { $0.elementsEqual([UInt8](repeating: 0, count: 15) + [1]) }
        case .unixDomainSocket:
            return false
        }
    }
}

/// What a request of `mirror serve` knows of its connection: Hummingbird's own, the
/// connection's event loop, which a streamed answer waits on between pieces, and the scope
/// of the device token it carries (`DeviceAuthorization`), when serve asks for one.
struct ServeContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection the request came on.
    let channel: any Channel
    var device: DeviceScope?

    var eventLoop: any EventLoop { channel.eventLoop }

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// The address the server listens on, and the origin a client reached it at.
final class ServerAddress: Sendable {
    /// `http`, or `https` when the server answers TLS.
    let scheme: String
    let bind: String
    private let port: Mutex<Int>

    init(scheme: String = "http", bind: String, port: Int) {
        self.scheme = scheme
        self.bind = bind
        self.port = Mutex(port)
    }

    func listening(on port: Int) {
        self.port.withLock { $0 = port }
    }

    /// The scheme (`http://` or `https://`) and the request's `Host` when it is a host name
    /// or address with an optional port, else the address listened on: a `Host` is put into
    /// answers' URLs, so nothing else of it is.
    func origin(asked authority: String?) -> String {
        if let authority, Self.isPlainAuthority(authority) { return "\(scheme)://" + authority }
        let host = bind.contains(":") ? "[\(bind)]" : bind
        return "\(scheme)://\(host):\(port.withLock { $0 })"
    }

    /// Whether `text` is a host name, an IPv4 address or a bracketed IPv6 address, in
    /// ASCII, with an optional port of 1 to 5 digits; read a byte at a time, as it is for
    /// every replayed page.
    static func isPlainAuthority(_ text: String) -> Bool {
        let bytes = text.utf8
        var rest = bytes.startIndex
        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        func isLetter(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) }
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return false }
            let inside = bytes[bytes.index(after: rest)..<close]
            guard !inside.isEmpty, inside.allSatisfy({ byte in
                isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20) || byte == UInt8(ascii: ":")
                    || byte == UInt8(ascii: ".")
            }) else { return false }
            rest = bytes.index(after: close)
        } else {
            let end = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.endIndex
            let name = bytes[rest..<end]
            guard !name.isEmpty, name.allSatisfy({ isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") })
            else { return false }
            rest = end
        }
        let port = bytes[rest...]
        guard let colon = port.first else { return true }
        let digits = port.dropFirst()
        return colon == UInt8(ascii: ":") && !digits.isEmpty && digits.count <= 5 && digits.allSatisfy(isDigit)
    }
}
