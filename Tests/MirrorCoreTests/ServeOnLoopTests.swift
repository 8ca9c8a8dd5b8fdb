import Foundation
import Logging
import NIOHTTP1
@testable import MirrorServe
import MirrorTestSupport
import Testing

@Suite("kept pages and files answered on the event loop", .timeLimit(.minutes(6)))
struct ServeOnLoopTests {
    /// The two pages of the fixture's API, mirrored into `harness`.
    private func mirrored() async throws -> Harness {
        let harness = try Harness()
        let api: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            return .json(PagedAPI(records: [[#"{"id":"1"}"#, #"{"id":"2"}"#], [#"{"id":"3"}"#]]).body(page: page))
        }
        _ = try await FixtureServer.with(api) { server in try await harness.run(itemsJob(), server: server) }
        return harness
    }

    /// Serves `harness`'s folder, kept pages answered on the event loop or not, while `body`
    /// runs with the server's base URL; then the answers sent on the loop.
    private func serving<T: Sendable>(_ harness: Harness, onLoop: Bool,
                                      _ body: (String, Int) async throws -> T) async throws -> (T, answeredOnLoop: Int) {
        var options = MirrorServer.Options(output: harness.output)
        options.port = 0
        options.answersOnLoop = onLoop
        let server = MirrorServer(options: options)
        let result = try await server.with(logger: Logger(label: "serve", factory: { _ in SwiftLogNoOpLogHandler() })) { port in
            try await body("http://127.0.0.1:\(port)", port)
        }
        return (result, server.answeredOnLoop.value)
    }

    /// The answers `ask` gets, given the server's base URL, from a server that answers on the
    /// event loop, having checked that it sent `answeredOnLoop` of them from there, that a
    /// server that does not sent the same (status, fields but `Date`, and bytes), and that
    /// each has a `Date` and names the server.
    private func compared(_ harness: Harness, answeredOnLoop expected: Int,
                          _ ask: (String) async throws -> [Got]) async throws -> [Got] {
        var answers: [[Got]] = []
        for onLoop in [true, false] {
            let (got, answered) = try await serving(harness, onLoop: onLoop) { base, _ in try await ask(base) }
            #expect(answered == (onLoop ? expected : 0))
            answers.append(got)
        }
        let (loop, router) = (answers[0], answers[1])
        #expect(loop.count == router.count)
        for (index, (mine, theirs)) in zip(loop, router).enumerated() {
            #expect(mine.status == theirs.status, "answer \(index)")
            #expect(mine.headers.filter { $0.key != "date" } == theirs.headers.filter { $0.key != "date" }, "answer \(index)")
            #expect(mine.body == theirs.body, "answer \(index)")
            #expect(mine.headers["date"] != nil && mine.headers["server"] == "mirror", "answer \(index)")
        }
        return loop
    }

    @Test("each answer is the router's: status, fields but Date, and bytes, for GET, HEAD, If-None-Match, another Host and serve's own paths")
    func sameAsRouter() async throws {
        let harness = try await mirrored()
        // The second GET, the HEAD and the 304 of page 1, and the second GET of page 2.
        let loop = try await compared(harness, answeredOnLoop: 4) { base in
            var got = [try await get(base + "/items?page=1")]
            got.append(try await get(base + "/items?page=1"))
            got.append(try await get(base + "/items?page=1", method: .HEAD))
            got.append(try await get(base + "/items?page=1", headers: [("If-None-Match", got[1].headers["etag"] ?? "")]))
            got.append(try await get(base + "/items?page=1", headers: [("Host", "mirror.example")]))
            got.append(try await get(base + "/items?page=2"))
            got.append(try await get(base + "/items?page=2"))
            got.append(try await get(base + "/_mirror/tables"))
            return got
        }
        #expect(loop.map(\.status) == [200, 200, 200, 304, 403, 200, 200, 200])
        #expect(loop[1].text.contains(#"{"id":"1"}"#) && loop[1].headers["content-security-policy"] == "sandbox")
        #expect(loop[2].body.isEmpty && loop[2].headers["content-length"] == loop[1].headers["content-length"])
    }

    @Test("files: each answer is the router's, for GET, HEAD, If-None-Match, a range and a query; a 416, another Host and a missing file go to the router")
    func filesSameAsRouter() async throws {
        let harness = try Harness()
        let content = Array((0..<300).map { UInt8($0 % 251) })
        let path = try await download("a.svg", content, contentType: "image/svg+xml", into: harness)
        // The second GET, the HEAD, the 304, the range and the GET with a query.
        let loop = try await compared(harness, answeredOnLoop: 5) { base in
            let url = base + "/_mirror/" + path
            var got = [try await get(url)]
            got.append(try await get(url))
            got.append(try await get(url, method: .HEAD))
            got.append(try await get(url, headers: [("If-None-Match", got[0].headers["etag"] ?? "")]))
            got.append(try await get(url, headers: [("Range", "bytes=10-19")]))
            got.append(try await get(url, headers: [("Range", "bytes=300-")]))
            got.append(try await get(url, headers: [("Host", "mirror.example")]))
            got.append(try await get(base + "/_mirror/files/nope.svg"))
            got.append(try await get(url + "?v=2"))
            return got
        }
        #expect(loop.map(\.status) == [200, 200, 200, 304, 206, 416, 403, 404, 200])
        #expect(loop[1].body == content && loop[1].headers["content-security-policy"] == "sandbox")
        #expect(loop[2].body.isEmpty && loop[2].headers["content-length"] == "300")
        #expect(loop[4].body == Array(content[10..<20]) && loop[4].headers["content-range"] == "bytes 10-19/300")
    }

    @Test("a kept page asked behind another request on the same connection is answered after it, by the router")
    func pipelinedInOrder() async throws {
        let harness = try await mirrored()
        let (answers, answered) = try await serving(harness, onLoop: true) { base, port in
            _ = try await get(base + "/items?page=1")
            #expect(try await get(base + "/items?page=1").status == 200)
            // Page 2 is assembled on the thread pool; page 1, kept for this origin, waits behind it.
            let host = "Host: 127.0.0.1:\(port)\r\n"
            let both = "GET /items?page=2 HTTP/1.1\r\n\(host)\r\nGET /items?page=1 HTTP/1.1\r\n\(host)\r\n"
            let inOrder = try await Self.exchange(port: port, both, answers: 2).answers
            // Asked to close, the connection is closed after the answer: the router's work.
            let closing = try await Self.exchange(port: port, "GET /items?page=1 HTTP/1.1\r\n\(host)Connection: close\r\n\r\n", answers: 1)
            #expect(closing.answers.count == 1 && closing.answers.first?.contains(#"{"id":"1"}"#) == true && closing.closed)
            return inOrder
        }
        #expect(answers.count == 2)
        #expect(answers.first?.contains(#"{"id":"3"}"#) == true && answers.first?.contains(#"{"id":"1"}"#) == false)
        #expect(answers.last?.contains(#"{"id":"1"}"#) == true)
        // The first GET of page 1 was assembled and the second sent from the loop; the
        // pipelined one went to the router.
        #expect(answered == 1)
    }

    /// Sends `text` on a connection of its own and reads `answers` answers with a
    /// `Content-Length`, each as text, head and body; then whether the server closed the
    /// connection within a second. It waits on a thread of its own (`onThreadOfItsOwn`).
    private static func exchange(port: Int, _ text: String, answers: Int) async throws -> (answers: [String], closed: Bool) {
        let found = try await onThreadOfItsOwn { blockingExchange(port: port, text, answers: answers) }
        return try #require(found, "cannot connect to 127.0.0.1:\(port) and send the requests")
    }

    /// `exchange`'s work, which blocks: nil when the connection or the sending failed.
    private static func blockingExchange(port: Int, _ text: String, answers: Int) -> (answers: [String], closed: Bool)? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let bytes = Array(text.utf8)
        guard connected == 0, send(descriptor, bytes, bytes.count, 0) == bytes.count else { return nil }
        var received: [UInt8] = []
        var found: [String] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let deadline = ContinuousClock.now + .seconds(30)
        while found.count < answers, ContinuousClock.now < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            received += buffer[..<count]
            // Every whole answer at the front of what was received.
            while let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: received[..<end.lowerBound], as: UTF8.self).lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                guard received.count >= end.upperBound + length else { break }
                found.append(String(decoding: received[..<(end.upperBound + length)], as: UTF8.self))
                received.removeFirst(end.upperBound + length)
            }
        }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let closed = poll(&poller, 1, 1000) > 0 && recv(descriptor, &buffer, buffer.count, 0) == 0
        return (found, closed)
    }
}
