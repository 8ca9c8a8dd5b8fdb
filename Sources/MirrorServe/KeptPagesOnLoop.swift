import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import MirrorReplay
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Kept pages answered on the event loop that read their request, in front of Hummingbird's
/// task per connection: the request is never handed to Swift Concurrency's threads, and its
/// answer, the kept page's head with its body sent from the scratch file by `sendfile`
/// (`FileSends`), is written before the next request is read. Under
/// `scripts/bench/bench-serve.sh`, NIO alone answering so reached nginx's rate where
/// Hummingbird alone reached two thirds of it.
///
/// It answers only what the router would answer the same way, with the same fields: a GET
/// or HEAD with no body and no `Connection` field, for one of the API's paths (not
/// serve's own), whose `Host` the rebinding check lets through, on a connection that has
/// no other request being answered, when the page cache holds the page's answer with its
/// body in a scratch file and nothing was committed since. Everything else, the head held
/// until its end shows it has no body, goes on to Hummingbird unchanged. Only servers
/// without TLS, device tokens and metrics have one (see `MirrorServer.application`).
final class KeptPagesOnLoop: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    /// What the handlers of every connection share.
    final class Shared: Sendable {
        let pages: ReplayedPages
        let address: ServerAddress
        let hosts: RebindingGuard<ServeContext>
        let sends: FileSends
        let dates = HTTPDates()
        let answered: Count

        init(pages: ReplayedPages, address: ServerAddress, sends: FileSends, answered: Count) {
            self.pages = pages
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

    private let shared: Shared
    private let connectionGuard: ConnectionGuard
    /// A request's head that may be answered here, held until its end.
    private var held: HTTPRequest?

    init(shared: Shared, connectionGuard: ConnectionGuard) {
        self.shared = shared
        self.connectionGuard = connectionGuard
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(head):
            if held == nil, mayAnswer(head) {
                held = head
                return
            }
        case .body:
            if let head = held {
                held = nil
                context.fireChannelRead(wrapInboundOut(.head(head)))
            }
        case .end:
            if let head = held {
                held = nil
                if answer(head, context: context) { return }
                context.fireChannelRead(wrapInboundOut(.head(head)))
            }
        }
        context.fireChannelRead(data)
    }

    /// Whether the request of `head` goes where the router would send it to a kept page,
    /// with nothing the router's path would do otherwise.
    private func mayAnswer(_ head: HTTPRequest) -> Bool {
        guard connectionGuard.answeringOne, head.method == .get || head.method == .head,
              head.headerFields[.connection] == nil, let path = head.path, path.hasPrefix("/"),
              !MirrorServer.isOwn(URI(path)), shared.hosts.allows(host: head.authority) else { return false }
        return true
    }

    /// Writes the kept answer to the request of `head`, as the router's path writes it: the
    /// answer's fields, `shownNeverRun`'s, `Date` and `Server`. False, having written
    /// nothing, when the cache holds no current answer whose body is in a file.
    private func answer(_ head: HTTPRequest, context: ChannelHandlerContext) -> Bool {
        let arrival = MirrorServer.arrival(in: head.headerFields)
        let target = URI(head.path ?? "").string
        guard let moment = shared.pages.moment(after: arrival),
              case let .kept(entry, notModified)? = shared.pages.kept(
                  target: target, body: [], origin: shared.address.origin(asked: head.authority),
                  ifNoneMatch: head.headerFields[.ifNoneMatch], at: moment),
              let kept = entry.answer as? KeptResponse,
              let (status, fields) = kept.bodiless(status: entry.status, notModified: notModified, head: head.method == .head,
                                                   channel: context.channel, sends: shared.sends) else { return false }
        var headers = fields
        headers.append(contentsOf: MirrorServer.shownNeverRunFields)
        headers[.date] = shared.dates.now()
        headers[.server] = MirrorServer.serverName
        context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        shared.answered.add()
        return true
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
