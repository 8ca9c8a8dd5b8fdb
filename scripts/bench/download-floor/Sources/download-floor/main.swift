import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

// download-floor HOST PORT PREFIX COUNT CONNECTIONS FOLDER
//
// Fetches PREFIX/1.jpg ... PREFIX/COUNT.jpg from HOST:PORT over CONNECTIONS keep-alive
// HTTP/1.1 connections, each asking for the next file once the last has ended, and does
// for each file the least that mirror must: writes the body to a temporary file at its
// offsets as it arrives, hashes it with SHA-256, and renames the file into FOLDER. All of
// it runs on the event loops (as many as cores), with no task per file. Prints
// "<sha256>  <n>.jpg" for each file, as sha256sum does, and fails on any status but 200.

let arguments = CommandLine.arguments
guard arguments.count == 7, let port = Int(arguments[2]), let count = Int(arguments[4]),
      let connections = Int(arguments[5]) else {
    FileHandle.standardError.write(Data("usage: download-floor HOST PORT PREFIX COUNT CONNECTIONS FOLDER\n".utf8))
    exit(2)
}
let settings = Settings(host: arguments[1], port: port, prefix: arguments[3], count: count, folder: arguments[6])

struct Settings: Sendable {
    let host: String
    let port: Int
    let prefix: String
    let count: Int
    let folder: String
}

struct Failure: Error, CustomStringConvertible {
    let description: String
}

/// The next file to ask for, shared by every connection.
let nextFile = Atomic<Int>(1)
/// Each file's digest line, by number.
let sums = Mutex([String](repeating: "", count: count + 1))

final class Fetcher: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let settings: Settings
    private let done: EventLoopPromise<Void>
    private var number = 0
    private var descriptor: Int32 = -1
    private var offset = 0
    private var hash = SHA256()

    init(settings: Settings, done: EventLoopPromise<Void>) {
        self.settings = settings
        self.done = done
    }

    func channelActive(context: ChannelHandlerContext) {
        askForNext(context)
    }

    private func askForNext(_ context: ChannelHandlerContext) {
        number = nextFile.wrappingAdd(1, ordering: .relaxed).oldValue
        guard number <= settings.count else {
            context.close(promise: nil)
            done.succeed()
            return
        }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "\(settings.prefix)/\(number).jpg")
        head.headers.add(name: "Host", value: "\(settings.host):\(settings.port)")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    private var temporary: String { "\(settings.folder)/.\(number).partial" }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        do {
            switch unwrapInboundIn(data) {
            case let .head(head):
                guard head.status == .ok else { throw Failure(description: "\(number).jpg: HTTP \(head.status.code)") }
                descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                guard descriptor >= 0 else { throw Failure(description: "\(temporary): \(String(cString: strerror(errno)))") }
                offset = 0
                hash = SHA256()
            case let .body(buffer):
                try buffer.withUnsafeReadableBytes { bytes in
                    hash.update(bufferPointer: bytes)
                    var written = 0
                    while written < bytes.count {
                        let result = pwrite(descriptor, bytes.baseAddress! + written, bytes.count - written,
                                            off_t(offset + written))
                        guard result > 0 else { throw Failure(description: "\(temporary): \(String(cString: strerror(errno)))") }
                        written += result
                    }
                }
                offset += buffer.readableBytes
            case .end:
                let digest = hash.finalize().map { String(format: "%02x", $0) }.joined()
                close(descriptor)
                guard rename(temporary, "\(settings.folder)/\(number).jpg") == 0 else {
                    throw Failure(description: "\(number).jpg: \(String(cString: strerror(errno)))")
                }
                let line = "\(digest)  \(number).jpg"
                sums.withLock { $0[number] = line }
                askForNext(context)
            }
        } catch {
            errorCaught(context: context, error: error)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        done.fail(error)
        context.close(promise: nil)
    }
}

let group = MultiThreadedEventLoopGroup.singleton
var finished: [EventLoopFuture<Void>] = []
for _ in 0..<connections {
    let loop = group.next()
    let done = loop.makePromise(of: Void.self)
    finished.append(done.futureResult)
    ClientBootstrap(group: loop)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHTTPClientHandlers()
                try channel.pipeline.syncOperations.addHandler(Fetcher(settings: settings, done: done))
            }
        }
        .connect(host: settings.host, port: settings.port)
        .whenFailure { done.fail($0) }
}
do {
    for future in finished { try await future.get() }
} catch {
    FileHandle.standardError.write(Data("download-floor: \(error)\n".utf8))
    exit(1)
}
print(sums.withLock { $0.dropFirst().joined(separator: "\n") })
