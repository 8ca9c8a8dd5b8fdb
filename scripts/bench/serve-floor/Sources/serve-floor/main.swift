import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

// serve-floor PORT [--sendfile] [--nio] PREFIX=FOLDER ...
//
// Answers GET PREFIX/NAME with the bytes of FOLDER/NAME through Hummingbird's HTTP/1.1
// server and router, on as many event loops as cores. Each answer is a dictionary lookup
// and bytes made ready before the server listens: no request reads an index or a database,
// and no answer is checked or counted as mirror serve's are, so what it costs is the least
// any server on Hummingbird 2 spends on a request. Other paths get 404.
//
// By default every file is read into memory and each answer is a buffer already made. With
// --sendfile every file is kept open instead and its bytes go from the file to the
// connection with sendfile(2) after the head, which waits for them (TCP_CORK), as mirror
// serve sends kept pages and downloaded files: a handler behind NIO's HTTP/1 encoder takes
// the file a head names in a field of its own and writes it as a FileRegion.
//
// With --nio there is no Hummingbird: NIO's HTTP/1 server pipeline and one handler that
// answers each request on its connection's event loop, where it was read, with no task per
// connection and no hop to Swift Concurrency's threads. It measures what a server built that
// way could reach: the floor of another design, not of the parts mirror serve uses.

let arguments = Array(CommandLine.arguments.dropFirst())
let sendsFiles = arguments.contains("--sendfile")
let nioAlone = arguments.contains("--nio")
let mappings = arguments.dropFirst().filter { $0 != "--sendfile" && $0 != "--nio" }
guard let first = arguments.first, let port = Int(first), !mappings.isEmpty else {
    FileHandle.standardError.write(Data("usage: serve-floor PORT [--sendfile] [--nio] PREFIX=FOLDER ...\n".utf8))
    exit(2)
}

/// A file to answer with: its bytes, or its open descriptor and size.
enum Body: Sendable {
    case bytes(ByteBuffer)
    case file(descriptor: Int32, size: Int)
}

var bodies: [String: Body] = [:]
for mapping in mappings {
    guard let equals = mapping.firstIndex(of: "=") else {
        FileHandle.standardError.write(Data("serve-floor: '\(mapping)' is not PREFIX=FOLDER\n".utf8))
        exit(2)
    }
    let prefix = String(mapping[..<equals])
    let folder = URL(fileURLWithPath: String(mapping[mapping.index(after: equals)...]))
    guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey]) else {
        FileHandle.standardError.write(Data("serve-floor: cannot list \(folder.path)\n".utf8))
        exit(1)
    }
    for case let file as URL in walker where (try? file.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true {
        let relative = String(file.standardizedFileURL.path.dropFirst(folder.standardizedFileURL.path.count))
        if sendsFiles {
            let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
            var info = stat()
            guard descriptor >= 0, fstat(descriptor, &info) == 0 else {
                FileHandle.standardError.write(Data("serve-floor: cannot open \(file.path)\n".utf8))
                exit(1)
            }
            bodies[prefix + relative] = .file(descriptor: descriptor, size: Int(info.st_size))
        } else {
            bodies[prefix + relative] = .bytes(ByteBuffer(bytes: try Data(contentsOf: file)))
        }
    }
}
let served = bodies

/// The field naming the file whose bytes follow a head; never sent.
let fileField = "serve-floor-file"
let fileFieldName = HTTPField.Name(fileField)!

/// Writes the file a head names after it, with sendfile, the head corked to leave with its
/// first bytes.
final class SentFiles: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    static let cork = ChannelOptions.Types.SocketOption(level: .init(rawValue: 6), name: .init(rawValue: 3))

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case var .head(head) = unwrapOutboundIn(data), let path = head.headers[fileField].first,
              case let .file(descriptor, size)? = served[path] else {
            context.write(data, promise: promise)
            return
        }
        head.headers.remove(name: fileField)
        writeFile(head, descriptor: descriptor, size: size, context: context, promise: promise)
    }
}

/// Writes `head`, corked, and after it `size` bytes of the file open as `descriptor`, with
/// sendfile; `promise` is the head's.
func writeFile(_ head: HTTPResponseHead, descriptor: Int32, size: Int, context: ChannelHandlerContext,
               promise: EventLoopPromise<Void>?) {
    let options = context.channel.syncOptions
    try? options?.setOption(SentFiles.cork, value: 1)
    context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: promise)
    let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor)
    let region = FileRegion(fileHandle: handle, readerIndex: 0, endIndex: size)
    let written = context.eventLoop.makePromise(of: Void.self)
    written.futureResult.assumeIsolated().whenComplete { _ in
        _ = try? handle.takeDescriptorOwnership()
        try? options?.setOption(SentFiles.cork, value: 0)
    }
    context.write(NIOAny(HTTPServerResponsePart.body(.fileRegion(region))), promise: written)
}

/// Hummingbird's HTTP/1 connection with `SentFiles` behind NIO's HTTP/1 encoder.
struct SendingHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let http: HTTP1Channel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        http.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let encoder = try channel.pipeline.syncOperations.handler(type: HTTPResponseEncoder.self)
            try channel.pipeline.syncOperations.addHandler(SentFiles(), position: .after(encoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await http.handle(value: value, logger: logger)
    }
}

/// Answers each request on its connection's event loop, with NIO alone (`--nio`): the
/// body from memory, or the file with sendfile after a corked head, as `SentFiles` sends it.
final class AnsweredOnLoop: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var path: String?
    private var keepAlive = true

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(head):
            path = String(head.uri.prefix { $0 != "?" })
            keepAlive = head.isKeepAlive
        case .body:
            break
        case .end:
            answer(context: context)
        }
    }

    private func answer(context: ChannelHandlerContext) {
        var headers = HTTPHeaders([("content-type", "application/octet-stream")])
        let body = path.flatMap { served[$0] }
        let status: HTTPResponseStatus = body == nil ? .notFound : .ok
        switch body {
        case let .bytes(buffer)?:
            headers.add(name: "content-length", value: String(buffer.readableBytes))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        case let .file(descriptor, size)?:
            headers.add(name: "content-length", value: String(size))
            writeFile(HTTPResponseHead(version: .http1_1, status: status, headers: headers), descriptor: descriptor, size: size,
                      context: context, promise: nil)
        case nil:
            headers.add(name: "content-length", value: "0")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        }
        let ended = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: ended)
        if !keepAlive { ended.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
    }
}

if nioAlone {
    let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .serverChannelOption(.backlog, value: 256)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                try channel.pipeline.syncOperations.addHandler(AnsweredOnLoop())
            }
        }
        .bind(host: "127.0.0.1", port: port).get()
    print("serve-floor: \(served.count) files on 127.0.0.1:\(port), NIO alone\(sendsFiles ? ", sent with sendfile" : "")")
    try await server.closeFuture.get()
    exit(0)
}

let router = Router()
router.get("**") { request, _ -> Response in
    switch served[request.uri.path] {
    case let .bytes(body)?:
        return Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: ResponseBody(byteBuffer: body))
    case let .file(_, size)?:
        return Response(status: .ok, headers: [.contentType: "application/octet-stream", .contentLength: String(size),
                                               fileFieldName: request.uri.path])
    case nil:
        return Response(status: .notFound)
    }
}
let configuration = ApplicationConfiguration(address: .hostname("127.0.0.1", port: port), serverName: "serve-floor")
print("serve-floor: \(served.count) files on 127.0.0.1:\(port)\(sendsFiles ? ", sent with sendfile" : "")")
if sendsFiles {
    let server = HTTPServerBuilder { responder in SendingHTTP1Channel(http: HTTP1Channel(responder: responder)) }
    try await Application(router: router, server: server, configuration: configuration).runService()
} else {
    try await Application(router: router, configuration: configuration).runService()
}
