import HTTPTypes
import Hummingbird
import HummingbirdCore
import MirrorReplay
import NIOCore

/// Replayed pages over HTTP: the request's body collected, the cache asked on the request's
/// own task, the page assembled on the thread pool, and a larger page streamed into the
/// response a piece at a time.
extension ReplayedPages {
    /// The largest request body a replayed POST may send.
    static let maxRequestBody = 1 << 20

    /// The answer to `request`, asked on `channel`, for a client that reaches this server at
    /// `origin`: the page the mirror holds for it. A kept page's body is sent with `sendfile`
    /// by `sends` (nil over TLS).
    /// A `device` that reads only some accounts or tables gets the pages that hold them, read
    /// from the databases (a kept page's account is not known without them); any other
    /// page, or none, is `DeviceAuthorization.refused`.
    func response(to request: Request, origin: String, channel: any Channel, sends: FileSends?,
                  device: DeviceScope? = nil) async throws -> Response {
        var request = request
        var body: [UInt8] = []
        if request.method == .post {
            do {
                body = Array(try await request.collectBody(upTo: Self.maxRequestBody).readableBytesView)
            } catch is NIOTooManyBytesError {
                throw HTTPError(.contentTooLarge, message: "a request body may hold \(Self.maxRequestBody >> 20) MB at most")
            }
        }
        let (method, target, ifNoneMatch) = (request.method.rawValue, request.uri.string, request.headers[.ifNoneMatch])
        if let device, !device.isWhole {
            let answer = try await MirrorServer.blocking { [body] in
                try self.assembled(method: method, target: target, body: body, origin: origin, ifNoneMatch: ifNoneMatch,
                                   moment: nil, permits: { device.permits(table: $0, account: $1) })
            }
            if case let .whole(status, _, _) = answer, status == 404 { throw DeviceAuthorization.refused }
            return await Self.response(answer, head: request.method == .head, channel: channel, sends: sends)
        }
        let moment = moment(after: MirrorServer.arrival(of: request))
        if let moment, case let .kept(entry, notModified)? = kept(target: target, body: body, origin: origin,
                                                                  ifNoneMatch: ifNoneMatch, at: moment) {
            return Self.response(entry, notModified: notModified, head: request.method == .head, channel: channel, sends: sends)
        }
        let answer = try await MirrorServer.blocking { [body] in
            try self.assembled(method: method, target: target, body: body, origin: origin, ifNoneMatch: ifNoneMatch,
                               moment: moment)
        }
        return await Self.response(answer, head: request.method == .head, channel: channel, sends: sends)
    }

    /// A kept page's answer, in the form serve's cache keeps it (`KeptResponse`), to send on
    /// `channel`; its headers alone for a HEAD request (`head`).
    private static func response(_ entry: PageCache.Entry, notModified: Bool, head: Bool, channel: any Channel,
                                 sends: FileSends?) -> Response {
        guard let kept = entry.answer as? KeptResponse else {
            preconditionFailure("serve's page cache keeps its answers as KeptResponse (see MirrorServer.init)")
        }
        return kept.response(status: entry.status, notModified: notModified, head: head, channel: channel, sends: sends)
    }

    /// A replayed page: whole, or its records read a piece at a time on the thread pool, in
    /// the page's read transaction, between the envelope's two halves. The next piece is read
    /// only once the connection has taken the last: a response holds one piece and what the
    /// connection buffers (NIO's high-water mark, 64 KB) at most, whatever the client reads.
    /// `channel` is the request's connection (see `MirrorServer.taken`).
    private static func response(_ answer: ReplayAnswer, head: Bool, channel: any Channel, sends: FileSends?) async -> Response {
        let loop = channel.eventLoop
        switch answer {
        case let .whole(status, headers, body):
            return Response(status: .init(code: status), headers: HTTPFields(setting: headers),
                            body: status == 304 ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
        case let .kept(entry, notModified):
            return response(entry, notModified: notModified, head: head, channel: channel, sends: sends)
        case let .streamed(status, headers, page):
            let fields = HTTPFields(setting: headers)
            // The read transaction ends on the thread pool, however the answer ends.
            let finish: @Sendable () async -> Void = { _ = try? await MirrorServer.blocking { page.finish() } }
            if head {
                await finish()
                return Response(status: .init(code: status), headers: fields, body: ResponseBody())
            }
            let body = ResponseBody { writer in
                do {
                    try await writer.write(ByteBuffer(bytes: page.first))
                    var cursor = PageStream.Cursor()
                    while !cursor.done {
                        try await MirrorServer.taken(by: &writer, on: loop)
                        let read = try await MirrorServer.blocking { [cursor] () throws -> (ByteBuffer, PageStream.Cursor) in
                            var next = cursor
                            let piece = try page.piece(&next)
                            return (ByteBuffer(bytes: piece), next)
                        }
                        try await writer.write(read.0)
                        cursor = read.1
                    }
                    try await writer.write(ByteBuffer(bytes: page.last))
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
}
