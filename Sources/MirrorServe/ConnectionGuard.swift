import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import MirrorModel
import MirrorStore
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOPosix
import NIOSSL
import Synchronization

/// The time limits of one connection of `mirror serve`, kept where its bytes arrive and
/// leave (the front of its pipeline):
///
/// - a request's head must be whole `header` after its first byte arrived: a client that
///   sends it a byte at a time is closed;
/// - bytes waiting for a client that has stopped reading must begin to leave within `send`
///   (the connection took no more for that long): the connection is reset, the response
///   writing to it fails, and its read transaction and buffers are let go.
///
/// Between requests, and before the first byte, Hummingbird's idle timeout applies.
///
/// Each limit's timer is scheduled once and left running while requests come and go: a
/// request notes when its head began (and a response when the connection stopped taking
/// bytes), and the timer, when it fires, compares the time with the note and schedules
/// itself again for the note's own deadline. A timer scheduled and cancelled for every
/// request, and for every response larger than what the connection buffers, was 5% of
/// serve's CPU under `scripts/bench/bench-serve.sh`.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private enum State {
        /// No byte of the next request yet.
        case waiting
        /// A request's head is arriving, since the time it holds.
        case readingHead(since: NIODeadline)
        /// The head is read; the request is being answered.
        case answering
    }

    private let header: TimeAmount
    private let send: TimeAmount
    private let connections: OpenConnections
    private var context: ChannelHandlerContext?
    private var state = State.waiting
    /// Requests whose head was read and whose response has not ended: more than one when a
    /// client sends the next before the last is answered.
    private var inProgress = 0
    /// A graceful stop asked the connection to close (NIO's `ChannelShouldQuiesceEvent`).
    private var quiescing = false
    /// Since when the connection has taken none of the bytes it holds; nil while it takes them.
    private var unwritableSince: NIODeadline?
    private var headerTimer: Scheduled<Void>?
    private var sendTimer: Scheduled<Void>?

    init(header: Duration, send: Duration, connections: OpenConnections) {
        self.header = TimeAmount(header)
        self.send = TimeAmount(send)
        self.connections = connections
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        connections.add(context.channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimers()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimers()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .waiting = state {
            let now = NIODeadline.now()
            state = .readingHead(since: now)
            if headerTimer == nil { headerTimer = schedule(at: now + header, context: context) { $0.headerTimerFired(context: $1) } }
        }
        context.fireChannelRead(data)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            unwritableSince = nil
        } else if unwritableSince == nil {
            let now = NIODeadline.now()
            unwritableSince = now
            if sendTimer == nil { sendTimer = schedule(at: now + send, context: context) { $0.sendTimerFired(context: $1) } }
        }
        context.fireChannelWritabilityChanged()
    }

    /// Whether one request is being answered and no other: the last one whose head was read.
    var answeringOne: Bool { inProgress == 1 }

    /// `RequestMarker` read a request's head.
    func headRead() {
        state = .answering
        inProgress += 1
    }

    /// `RequestMarker` wrote a response's end.
    func responseEnded() {
        state = .waiting
        inProgress -= 1
        if quiescing, inProgress == 0, let context { closeOnceSent(context: context) }
    }

    /// A graceful stop closes the connection at once when no request is being answered, else
    /// once the last response's last byte has left. The event is not passed on: Hummingbird's
    /// handler would close the connection as soon as the response's end was written, and
    /// NIO drops what it still holds for a client that reads slowly (the end of the page).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        quiescing = true
        if inProgress == 0 { context.close(promise: nil) }
    }

    /// The head being read, if any, is closed when its deadline has passed; else the timer
    /// waits for that deadline, or for the next head's first byte.
    private func headerTimerFired(context: ChannelHandlerContext) {
        headerTimer = nil
        guard case let .readingHead(since) = state else { return }
        let deadline = since + header
        guard deadline <= .now() else {
            headerTimer = schedule(at: deadline, context: context) { $0.headerTimerFired(context: $1) }
            return
        }
        context.close(promise: nil)
    }

    /// A connection that has taken no bytes for `send` is reset; one that took some since
    /// waits for its own deadline, or for the next time it stops taking them.
    private func sendTimerFired(context: ChannelHandlerContext) {
        sendTimer = nil
        guard let since = unwritableSince else { return }
        let deadline = since + send
        guard deadline <= .now() else {
            sendTimer = schedule(at: deadline, context: context) { $0.sendTimerFired(context: $1) }
            return
        }
        // Reset, not closed: the kernel would otherwise keep the bytes it holds for the
        // client (a few MB on loopback) until the client read them.
        // (On its event loop, the option is set before `setSoLinger` returns.)
        _ = (context.channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0))
        context.close(promise: nil)
    }

    private func schedule(at deadline: NIODeadline, context: ChannelHandlerContext,
                          _ fired: @escaping (ConnectionGuard, ChannelHandlerContext) -> Void) -> Scheduled<Void> {
        context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { fired(self, context) }
    }

    /// Closes the connection once every byte written to it so far has left: NIO completes an
    /// empty write's promise after the writes before it.
    private func closeOnceSent(context: ChannelHandlerContext) {
        let sent = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(ByteBuffer())), promise: sent)
        sent.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    private func cancelTimers() {
        headerTimer?.cancel()
        headerTimer = nil
        sendTimer?.cancel()
        sendTimer = nil
    }
}

/// Behind the HTTP codec: tells its connection's `ConnectionGuard` when a request's head was
/// read and when its response ended, by a call on the connection's event loop (an event sent
/// through the pipeline passed every handler between them), and writes in each request's
/// head when it arrived (`MirrorServer.arrival(of:)`).
final class RequestMarker: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// The field a request's head carries its arrival in; one the client sent is replaced.
    static let arrivalField = HTTPField.Name("mirror-arrival")!

    /// The connection's guard, set once both are in its pipeline.
    var connectionGuard: ConnectionGuard?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case var .head(head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        connectionGuard?.headRead()
        let arrival = HTTPField(name: Self.arrivalField, value: String(CommitWatcher.now()))
        if head.headerFields.contains(Self.arrivalField) {
            head.headerFields[fields: Self.arrivalField] = [arrival]
        } else {
            head.headerFields.append(arrival)
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let ends: Bool
        if case .end = unwrapOutboundIn(data) { ends = true } else { ends = false }
        context.write(data, promise: promise)
        if ends { connectionGuard?.responseEnded() }
    }
}

/// The connections a server holds open, to close them all when its stop may wait no longer.
/// When the last one closes, the memory the allocator keeps free is given back to the
/// system: without it, serve stayed at the size its busiest moment took (the buffers of
/// 200 clients that stopped reading, freed on the threads that served them).
final class OpenConnections: Sendable {
    private let open = Mutex<[ObjectIdentifier: any Channel]>([:])

    func add(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        open.withLock { $0[key] = channel }
        channel.closeFuture.whenComplete { [self] _ in
            let left = open.withLock { open in
                open.removeValue(forKey: key)
                return open.count
            }
            if left == 0 {
                Task { _ = try? await NIOThreadPool.singleton.runIfActive { _ = Self.mallocTrim?(0) } }
            }
        }
    }

    /// glibc's `malloc_trim`, which Swift's Glibc module does not declare.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()

    /// Closes every open connection: the responses still being sent are cut.
    func closeAll() {
        for channel in open.withLock({ Array($0.values) }) {
            channel.close(promise: nil)
        }
    }
}

/// Hummingbird's HTTP/1 connection with a `ConnectionGuard` in front of it (behind TLS, when
/// served: the guard's limits count the bytes of requests and responses), a `RequestMarker`
/// behind its codec, and without TLS, `SentFiles` behind NIO's HTTP/1 encoder (`sends`) and,
/// when the server has one (`onLoop`), `KeptAnswersOnLoop` in front of Hummingbird's handler.
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let http: HTTP1Channel
    let header: Duration
    let send: Duration
    let connections: OpenConnections
    let tls: ServedTLS?
    let sends: FileSends?
    let onLoop: KeptAnswersOnLoop.Shared?

    init(responder: @escaping HTTPChannelHandler.Responder, idle: Duration, header: Duration, send: Duration,
         connections: OpenConnections, tls: ServedTLS?, sends: FileSends?, onLoop: KeptAnswersOnLoop.Shared?) {
        http = HTTP1Channel(responder: responder, configuration: .init(
            additionalChannelHandlers: [RequestMarker()], idleTimeout: TimeAmount(idle)))
        self.header = header
        self.send = send
        self.connections = connections
        self.tls = tls
        self.sends = sends
        self.onLoop = onLoop
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let (header, send, connections, http, sends, onLoop) = (self.header, self.send, self.connections, self.http, self.sends,
                                                                self.onLoop)
        // The certificate current now, kept by this connection whatever a reload reads later.
        let context = tls?.context
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(
                ConnectionGuard(header: header, send: send, connections: connections), position: .first)
            if let context {
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context), position: .first)
            }
        }.flatMap {
            http.setup(channel: channel, logger: logger)
        }.flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let connectionGuard = try pipeline.handler(type: ConnectionGuard.self)
            try pipeline.handler(type: RequestMarker.self).connectionGuard = connectionGuard
            if let sends {
                let encoder = try pipeline.handler(type: HTTPResponseEncoder.self)
                try pipeline.addHandler(SentFiles(sends: sends), position: .after(encoder))
            }
            // Behind Hummingbird's connection state, which sees its requests and answers too.
            if let onLoop {
                let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
                try pipeline.addHandler(KeptAnswersOnLoop(shared: onLoop, connectionGuard: connectionGuard), position: .after(state))
            }
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await http.handle(value: value, logger: logger)
    }
}
