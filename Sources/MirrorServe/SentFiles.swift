import HTTPTypes
import NIOCore
import NIOHTTP1
import Synchronization

/// Bytes of open files that answers send with `sendfile(2)`, from the file to the connection
/// without passing through the process, as nginx does: a downloaded file, or a kept page's
/// body in its scratch file. Hummingbird 2 writes buffers only, so such an answer is a head
/// and an empty body, the head naming its bytes in a field of this server's own (`field`),
/// which the connection's `SentFiles` takes out as the head passes, writing the bytes after
/// it. Only connections without TLS have one: over TLS the bytes must pass through the
/// process to be encrypted.
final class FileSends: Sendable {
    /// Bytes to send: `range` of the file open as `descriptor`, which `holder` keeps open
    /// (and, for a kept page, keeps its bytes in their place) until they have been sent.
    struct Pending: Sendable {
        let descriptor: Int32
        let range: Range<Int>
        let holder: any Sendable
    }

    /// The field that names an answer's bytes; never sent.
    static let field = HTTPField.Name("mirror-sendfile")!

    private struct State {
        var next = 0
        var pending: [ObjectIdentifier: [Int: Pending]] = [:]
    }

    private let state = Mutex(State())

    /// `headers` with the length of `pending` and, when it has bytes, the field that names
    /// them, kept here until `SentFiles` takes them on `channel`.
    func fields(_ headers: HTTPFields, sending pending: Pending, on channel: any Channel) -> HTTPFields {
        var headers = headers
        headers[.contentLength] = String(pending.range.count)
        guard !pending.range.isEmpty else { return headers }
        let key = ObjectIdentifier(channel)
        let token = state.withLock { state in
            state.next += 1
            state.pending[key, default: [:]][state.next] = pending
            return state.next
        }
        // A connection stops being active before its handlers are removed, which drops what
        // it held (`drop`): one that closed meanwhile holds nothing added after.
        if !channel.isActive { drop(key) }
        // After any field of that name the answer has (an API's, replayed with its page).
        headers.append(HTTPField(name: Self.field, value: String(token)))
        return headers
    }

    /// The bytes the answer numbered `token` on `channel` names, no longer held here.
    fileprivate func take(_ token: Int, on channel: ObjectIdentifier) -> Pending? {
        state.withLock { state in state.pending[channel]?.removeValue(forKey: token) }
    }

    /// Lets go of what the answers of `channel` named and have not sent.
    fileprivate func drop(_ channel: ObjectIdentifier) {
        _ = state.withLock { state in state.pending.removeValue(forKey: channel) }
    }
}

/// Writes the bytes an answer's head names (`FileSends`) after the head, with `sendfile`:
/// between NIO's HTTP/1 encoder and Hummingbird's codec, which passes buffers only.
///
/// `sendfile` sends what the file holds at the region's offsets: a downloaded file shortened
/// in place by another program while it is sent (mirror never rewrites one: it writes a new
/// file and renames it) leaves its answer short, and the connection is dropped after
/// `--send-timeout`.
final class SentFiles: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Linux's TCP_CORK (IPPROTO_TCP 6, option 3): partial packets wait until it is set back
    /// to 0. Elsewhere the head leaves on its own.
    static let cork: ChannelOptions.Types.SocketOption? = {
        #if os(Linux)
        ChannelOptions.Types.SocketOption(level: .init(rawValue: 6), name: .init(rawValue: 3))
        #else
        nil
        #endif
    }()

    private let sends: FileSends
    private var channel: ObjectIdentifier?

    init(sends: FileSends) {
        self.sends = sends
    }

    func handlerAdded(context: ChannelHandlerContext) {
        channel = ObjectIdentifier(context.channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if let channel { sends.drop(channel) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // The answer's own field is its last of that name; one that names no bytes held for
        // this connection is not this server's: an API's header, replayed with its page,
        // goes on as it came.
        let name = FileSends.field.rawName
        guard case var .head(head) = unwrapOutboundIn(data), let channel, let token = head.headers[name].last,
              let number = Int(token), let pending = sends.take(number, on: channel) else {
            context.write(data, promise: promise)
            return
        }
        let others = head.headers[name].dropLast()
        head.headers.remove(name: name)
        for value in others { head.headers.add(name: name, value: value) }
        // The head waits for the file's first bytes, to leave in the same packet (TCP_CORK).
        let options = context.channel.syncOptions
        if let cork = Self.cork { try? options?.setOption(cork, value: 1) }
        context.write(wrapOutboundOut(.head(head)), promise: promise)
        // NIO's handle gives the descriptor back once the write has ended, sent or failed;
        // `pending` keeps it open until then.
        let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: pending.descriptor)
        let region = FileRegion(fileHandle: handle, readerIndex: pending.range.lowerBound, endIndex: pending.range.upperBound)
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenComplete { _ in
            _ = try? handle.takeDescriptorOwnership()
            withExtendedLifetime(pending) {}
            if let cork = Self.cork { try? options?.setOption(cork, value: 0) }
        }
        context.write(wrapOutboundOut(.body(.fileRegion(region))), promise: written)
    }
}
