import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import MirrorDownload
import MirrorReplay
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Kept pages and kept files answered on the event loop that read their request, in front
/// of Hummingbird's task per connection: the request is never handed to Swift Concurrency's
/// threads, and its answer, the head with the body sent from the page's scratch file or the
/// downloaded file by `sendfile` (`FileSends`), is written before the next request is read.
/// Under `scripts/bench/bench-serve.sh`, NIO alone answering so reached nginx's rate where
/// Hummingbird alone reached two thirds of it.
///
/// It answers only what the router would answer the same way, with the same fields: a GET
/// or HEAD with no body and no `Connection` field, whose `Host` the rebinding check lets
/// through, on a connection that has no other request being answered, when nothing was
/// committed since the answer was kept:
/// - for one of the API's paths (not serve's own), a page whose answer the page cache holds
///   with its body in a scratch file;
/// - for `/_mirror/files/…`, a file an earlier answer found and keeps open (`OpenedFiles`),
///   still at its path, answered whole, as a range, or as a 304 (`ServedFiles.kept`).
/// Everything else, the head held until its end shows it has no body, goes on to Hummingbird
/// unchanged. Only servers without TLS, device tokens and metrics have one (see
/// `MirrorServer.application`).
final class KeptAnswersOnLoop: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    /// What the handlers of every connection share.
    final class Shared: Sendable {
        let pages: ReplayedPages
        let files: ServedFiles
        let address: ServerAddress
        let hosts: RebindingGuard<ServeContext>
        let sends: FileSends
        let dates = HTTPDates()
        let answered: Count

        init(pages: ReplayedPages, files: ServedFiles, address: ServerAddress, sends: FileSends, answered: Count) {
            self.pages = pages
            self.files = files
            self.address = address
            hosts = RebindingGuard(bind: address.bind)
            self.sends = sends
            self.answered = answered
        }
    }

    /// The answers sent from here, for the tests.
    final class Count: Sendable {
        private let count = Atomic<Int>(0)

        var value: Int { count.load(ordering: .relaxed) }

        func add() { count.add(1, ordering: .relaxed) }
    }

    /// What a request that may be answered here asks for.
    private enum Target {
        /// A page of the API: its target, the path and query as the router reads them.
        case page(target: String)
        /// A downloaded file: its path below the output folder, as the router's file route
        /// gives it to `ServedFiles`.
        case file(relative: String)
    }

    private let shared: Shared
    private let connectionGuard: ConnectionGuard
    /// A request's head that may be answered here, and what it asks for, held until its end.
    private var held: (head: HTTPRequest, target: Target)?

    init(shared: Shared, connectionGuard: ConnectionGuard) {
        self.shared = shared
        self.connectionGuard = connectionGuard
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(head):
            if held == nil, let target = mayAnswer(head) {
                held = (head, target)
                return
            }
        case .body:
            if let (head, _) = held {
                held = nil
                context.fireChannelRead(wrapInboundOut(.head(head)))
            }
        case .end:
            if let (head, target) = held {
                held = nil
                if answer(head, target, context: context) { return }
                context.fireChannelRead(wrapInboundOut(.head(head)))
            }
        }
        context.fireChannelRead(data)
    }

    /// What the request of `head` asks for, when it goes where the router would send it to a
    /// kept page or a downloaded file, with nothing the router's path would do otherwise.
    private func mayAnswer(_ head: HTTPRequest) -> Target? {
        guard connectionGuard.answeringOne, head.method == .get || head.method == .head,
              head.headerFields[.connection] == nil, let path = head.path, path.hasPrefix("/"),
              shared.hosts.allows(host: head.authority) else { return nil }
        let uri = URI(path)
        guard MirrorServer.isOwn(uri) else { return .page(target: uri.string) }
        // The router's file route gives the rest of the path as sent, percent-decoded. A rest
        // with an empty segment, which the router would read otherwise, is no file's (nor
        // ever kept): `ServedFiles` finds none, and the router answers.
        let prefix = "/_mirror/files/"
        guard uri.path.hasPrefix(prefix),
              let rest = MirrorServer.percentDecoded(String(uri.path.dropFirst(prefix.count))) else { return nil }
        return .file(relative: FileNaming.folder + "/" + rest)
    }

    /// Writes the kept answer to the request of `head`, as the router's path writes it: the
    /// answer's fields, `shownNeverRun`'s, `Date` and `Server`. False, having written
    /// nothing, when there is no current kept answer that is all fields and a file's bytes.
    private func answer(_ head: HTTPRequest, _ target: Target, context: ChannelHandlerContext) -> Bool {
        let arrival = MirrorServer.arrival(in: head.headerFields)
        let kept: (HTTPResponse.Status, HTTPFields)?
        switch target {
        case let .page(target):
            kept = page(target, head, arrival: arrival, channel: context.channel)
        case let .file(relative):
            let asked = ServedFiles.Asked(range: head.headerFields[.range], ifRange: head.headerFields[.ifRange],
                                          ifNoneMatch: head.headerFields[.ifNoneMatch])
            kept = shared.files.kept(relative, asked: asked, head: head.method == .head, arrival: arrival,
                                     channel: context.channel)
        }
        guard let (status, fields) = kept else { return false }
        var headers = fields
        headers.append(contentsOf: MirrorServer.shownNeverRunFields)
        headers[.date] = shared.dates.now()
        headers[.server] = MirrorServer.serverName
        context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        shared.answered.add()
        return true
    }

    /// The kept page's answer to `target`, when the page cache holds a current one whose
    /// body is in a file.
    private func page(_ target: String, _ head: HTTPRequest, arrival: UInt64?,
                      channel: any Channel) -> (HTTPResponse.Status, HTTPFields)? {
        guard let moment = shared.pages.moment(after: arrival),
              case let .kept(entry, notModified)? = shared.pages.kept(
                  target: target, body: [], origin: shared.address.origin(asked: head.authority),
                  ifNoneMatch: head.headerFields[.ifNoneMatch], at: moment),
              let kept = entry.answer as? KeptResponse else { return nil }
        return kept.bodiless(status: entry.status, notModified: notModified, head: head.method == .head,
                             channel: channel, sends: shared.sends)
    }
}

/// The `Date` field's value now (an IMF-fixdate, RFC 9110: `Tue, 01 Dec 2026 01:29:51 GMT`),
/// made once a second.
final class HTTPDates: Sendable {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private let last = Mutex<(second: Int, text: String)>((-1, ""))

    func now() -> String {
        let second = time(nil)
        return last.withLock { last in
            if last.second != second { last = (second, Self.text(of: second)) }
            return last.text
        }
    }

    static func text(of second: Int) -> String {
        var clock = time_t(second)
        var parts = tm()
        gmtime_r(&clock, &parts)
        func two(_ number: Int32) -> String { number < 10 ? "0\(number)" : "\(number)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
