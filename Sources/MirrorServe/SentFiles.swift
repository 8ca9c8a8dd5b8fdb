import NIOCore
import NIOHTTP1

/// Sends a downloaded file's bytes with `sendfile(2)`, from the file to the connection without
/// passing through the process, as nginx does: between NIO's HTTP/1 encoder and
/// Hummingbird's codec, which passes only buffers. A file's response is its head and end as
/// Hummingbird writes them; its body is the `FileRegion` handed to `send`, written once the
/// head has passed, before the end. Not in a TLS connection's pipeline: there the bytes must
/// pass through the process to be encrypted (see `ServedFiles`).
///
/// `sendfile` sends what the file holds at the region's offsets: a file shortened in place
/// by another program while it is sent (mirror never rewrites a downloaded file: it writes a
/// new one and renames it) leaves its response short, and the connection is closed by
/// `--send-timeout`.
final class SentFiles: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// The connection was closed, or this handler removed, before the region was sent.
    struct Closed: Error {}

    private var context: ChannelHandlerContext?
    /// A response's head has passed, and its end not yet.
    private var answering = false
    /// A region handed over before its response's head passed.
    private var waiting: (region: FileRegion, promise: EventLoopPromise<Void>)?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        waiting?.promise.fail(Closed())
        waiting = nil
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        context.write(data, promise: promise)
        switch part {
        case .head:
            answering = true
            if let (region, promise) = waiting {
                waiting = nil
                context.writeAndFlush(wrapOutboundOut(.body(.fileRegion(region))), promise: promise)
            }
        case .end:
            answering = false
        case .body:
            break
        }
    }

    /// On the connection's event loop `loop`: sends `region` as the body of the response
    /// being written, whose head gives its length; succeeds once the connection has taken
    /// it whole (the kernel holds or has sent its bytes), fails once it cannot.
    func send(_ region: FileRegion, on loop: any EventLoop) -> EventLoopFuture<Void> {
        guard let context else { return loop.makeFailedFuture(Closed()) }
        let promise = loop.makePromise(of: Void.self)
        if answering {
            context.writeAndFlush(wrapOutboundOut(.body(.fileRegion(region))), promise: promise)
        } else {
            waiting?.promise.fail(Closed())
            waiting = (region, promise)
        }
        return promise.futureResult
    }
}
