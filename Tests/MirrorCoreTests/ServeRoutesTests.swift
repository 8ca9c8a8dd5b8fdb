import Foundation
import MirrorTestSupport
import NIOHTTP1
import Testing

@Suite("mirror serve's routes", .timeLimit(.minutes(6)))
struct ServeRoutesTests {
    @Test("own paths take GET and HEAD, the API's GET, HEAD and POST; an unknown own path is 404, another method 405")
    func methodsAndUnknownPaths() async throws {
        let harness = try Harness()
        try await FixtureServer.with { request in
            .json(PagedAPI(ids: [["1", "2"]]).body(page: Int(request.parameter("page") ?? "") ?? 0))
        } _: { server in
            _ = try await harness.run(itemsJob(), server: server)
        }
        try await serving(harness) { base in
            for path in ["/_mirror/nope", "/_mirror", "/_mirror/", "/_mirror/files", "/_mirror/files/", "/_mirror/changes",
                         "/_mirror/tables/t_item/x", "/_mirror/tables/t_item%2Fx", "/_mirror/status/x"] {
                let answer = try await get(base + path)
                #expect(answer.status == 404 && answer.headers["content-type"] == "application/json", "\(path)")
                #expect(answer.text == #"{"error":"no such path: '\#(path)'"}"# + "\n", "\(path)")
            }
            // Paths are read as the router reads them: empty segments are left out.
            let tables = try await get(base + "/_mirror/tables")
            #expect(tables.status == 200 && tables.text.contains(#""table" : "t_item""#))
            for path in ["/_mirror/tables/", "//_mirror//tables"] {
                let same = try await get(base + path)
                #expect(same.status == 200 && same.text == tables.text, "\(path)")
            }
            let status = try await get(base + "//")
            #expect(status.status == 200 && status.headers["content-type"] == "text/html; charset=utf-8")
            // A table's name is percent-decoded.
            let encoded = try await get(base + "/_mirror/tables/t%5Fitem")
            #expect(encoded.status == 200 && encoded.text == "[\n{\"id\":\"1\",\"page\":1},\n{\"id\":\"2\",\"page\":1}\n]\n")
            let head = try await get(base + "/_mirror/tables", method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty && head.headers["content-type"] == "application/json")
            for (method, path) in [(NIOHTTP1.HTTPMethod.POST, "/_mirror/tables"), (.POST, "/"), (.PUT, "/_mirror/files/x"),
                                   (.DELETE, "/_mirror/status"), (.POST, "/_mirror/nope"), (.OPTIONS, "/")] {
                let answer = try await get(base + path, method: method, body: method == .POST ? [] : nil)
                #expect(answer.status == 405 && answer.headers["allow"] == "GET, HEAD", "\(method) \(path)")
                #expect(answer.text == #"{"error":"only GET, HEAD are served here"}"# + "\n", "\(method) \(path)")
            }
            for (method, path) in [(NIOHTTP1.HTTPMethod.DELETE, "/items?page=1"), (.PUT, "/?page=1"), (.PATCH, "/elsewhere")] {
                let answer = try await get(base + path, method: method)
                #expect(answer.status == 405 && answer.headers["allow"] == "GET, HEAD, POST", "\(method) \(path)")
                #expect(answer.text == #"{"error":"only GET, HEAD, POST are served here"}"# + "\n", "\(method) \(path)")
            }
            // `/` with a query is the API's: a page, or none.
            let root = try await get(base + "/?page=1")
            #expect(root.status == 404 && root.text.hasPrefix(#"{"error":"the mirror holds no page for GET /?page=1","closest":["#))
            let posted = try await get(base + "/items?page=1", method: .POST, body: Array("{}".utf8))
            #expect(posted.status == 404 && posted.text.hasPrefix(#"{"error":"the mirror holds no page for POST /items?page=1","#))
            // A POST body larger than a replayed request may send.
            let large = try await get(base + "/items?page=1", method: .POST, body: [UInt8](repeating: 0x20, count: (1 << 20) + 1))
            #expect(large.status == 413 && large.text == #"{"error":"a request body may hold 1 MB at most"}"# + "\n")
            // The Host is checked before the method.
            let rebound = try await get(base + "/_mirror/tables", headers: [("Host", "evil.example")], method: .POST, body: [])
            #expect(rebound.status == 403 && rebound.headers["allow"] == nil)
            #expect(rebound.text == #"{"error":"this server answers requests for 127.0.0.1 and localhost only"}"# + "\n")
        }
    }
}
