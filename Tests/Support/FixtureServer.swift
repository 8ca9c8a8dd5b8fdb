import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A request as the fixture server saw it.
package struct FixtureRequest: Sendable {
    package let method: String
    package let path: String
    /// The query string without '?', or "".
    package let query: String
    /// Header names lowercased.
    package let headers: [String: String]
    package let body: [UInt8]
    /// `host:port` the client asked for.
    package let authority: String

    /// `http://host:port`: the server's own address, as the client named it.
    package var base: String { "http://\(authority)" }

    /// The value of one query parameter.
    package func parameter(_ name: String) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.first.map(String.init) == name {
                return parts.count > 1 ? String(parts[1]).removingPercentEncoding ?? String(parts[1]) : ""
            }
        }
        return nil
    }

    /// Path plus query, as requested.
    package var target: String { query.isEmpty ? path : "\(path)?\(query)" }
}

package struct FixtureResponse: Sendable {
    /// How the body goes on the wire.
    package enum Delivery: Sendable {
        /// With a Content-Length.
        case whole
        /// Chunked in pieces of this many bytes, no Content-Length.
        case chunked(Int)
        /// Announces the whole body's length, sends this many bytes, then drops the connection.
        case cutShort(at: Int)
        /// Announces the whole body's length, sends this many bytes, then nothing more until
        /// the server stops (when the rest goes to whoever still listens).
        case stall(at: Int)
        /// Announces the whole body's length, then sends `bytes` bytes at a time, each piece
        /// after the one before once `pause` returns, until the body is sent or the server
        /// stops (`pause` must return then too).
        case trickle(bytes: Int, pause: @Sendable () async -> Void)
    }

    package var status: Int
    package var headers: [(String, String)]
    package var body: [UInt8]
    package var delivery: Delivery

    package init(status: Int = 200, headers: [(String, String)] = [], body: [UInt8], delivery: Delivery = .whole) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delivery = delivery
    }

    package static func json(_ text: String, status: Int = 200, headers: [(String, String)] = []) -> FixtureResponse {
        FixtureResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(text.utf8))
    }

    package static func text(_ text: String, status: Int, contentType: String = "text/plain") -> FixtureResponse {
        FixtureResponse(status: status, headers: [("Content-Type", contentType)], body: Array(text.utf8))
    }
}

/// A live HTTP server on 127.0.0.1 with a port of its own, answering with `handler`
/// and logging every request it receives.
package final class FixtureServer: Sendable {
    package let port: Int
    private let log: SharedLog

    init(port: Int, log: SharedLog) {
        self.port = port
        self.log = log
    }

    package var base: String { "http://127.0.0.1:\(port)" }

    /// Every request received so far, in arrival order.
    package var requests: [FixtureRequest] { log.mutex.withLock { $0 } }

    /// Starts a server, waits until it listens, runs `body`, then shuts it down.
    package static func with<T: Sendable>(
        _ handler: @escaping @Sendable (FixtureRequest) async -> FixtureResponse,
        _ body: (FixtureServer) async throws -> T
    ) async throws -> T {
        let log = SharedLog()
        let stopping = Gate()
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName.lowercased()] = field.value }
            var request = request
            let buffer = try await request.collectBody(upTo: 64 << 20)
            let fixtureRequest = FixtureRequest(
                method: request.method.rawValue, path: request.uri.path, query: request.uri.query ?? "",
                headers: headers, body: Array(buffer.readableBytesView), authority: request.head.authority ?? "")
            log.append(fixtureRequest)
            let answer = await handler(fixtureRequest)
            var fields = HTTPFields()
            for (name, value) in answer.headers {
                if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
            }
            let bytes = answer.body
            let body: ResponseBody
            switch answer.delivery {
            case .whole:
                body = ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
            case let .chunked(size):
                body = ResponseBody { writer in
                    for start in stride(from: 0, to: bytes.count, by: max(1, size)) {
                        try await writer.write(ByteBuffer(bytes: bytes[start..<min(bytes.count, start + size)]))
                    }
                    try await writer.finish(nil)
                }
            case let .stall(at):
                body = ResponseBody(contentLength: bytes.count) { writer in
                    try await writer.write(ByteBuffer(bytes: bytes.prefix(at)))
                    await stopping.wait()
                    try await writer.write(ByteBuffer(bytes: bytes.dropFirst(at)))
                    try await writer.finish(nil)
                }
            case let .trickle(size, pause):
                body = ResponseBody(contentLength: bytes.count) { writer in
                    for start in stride(from: 0, to: bytes.count, by: max(1, size)) where !stopping.isOpen {
                        if start > 0 { await pause() }
                        try await writer.write(ByteBuffer(bytes: bytes[start..<min(bytes.count, start + size)]))
                    }
                    try await writer.finish(nil)
                }
            case let .cutShort(at):
                body = ResponseBody(contentLength: bytes.count) { writer in
                    try await writer.write(ByteBuffer(bytes: bytes.prefix(at)))
                    throw CancellationError()
                }
            }
            return Response(status: .init(code: answer.status), headers: fields, body: body)
        }
        let (portStream, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            responder: responder,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: Logger(label: "fixture-server", factory: { _ in SwiftLogNoOpLogHandler() }))
        // Stopped by a graceful shutdown, never by cancelling: cancelling the server's task
        // can leave an accepted connection unserved, which traps in SwiftNIO.
        let services = ServiceGroup(configuration: .init(
            services: [app], gracefulShutdownSignals: [],
            logger: Logger(label: "fixture-server", factory: { _ in SwiftLogNoOpLogHandler() })))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            var port = 0
            for await value in portStream { port = value }
            let server = FixtureServer(port: port, log: log)
            let outcome: Result<T, any Error>
            do {
                outcome = .success(try await body(server))
            } catch {
                outcome = .failure(error)
            }
            stopping.open()
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
            return try outcome.get()
        }
    }
}

/// The request log shared between the responder and the test.
final class SharedLog: Sendable {
    let mutex = Mutex<[FixtureRequest]>([])
    func append(_ request: FixtureRequest) { mutex.withLock { $0.append(request) } }
}

/// Closed until `open`; then every `wait`, past and future, returns.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resume = state.withLock { state in
                if state.open { return true }
                state.waiting.append(continuation)
                return false
            }
            if resume { continuation.resume() }
        }
    }

    var isOpen: Bool { state.withLock { $0.open } }

    func open() {
        let waiting = state.withLock { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
