import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MirrorDevice
import MirrorTestSupport
import Testing

/// The API: three pages of two events, each naming its cover image, then an empty page.
/// Every title and the `X-Edition` header hold `edition`, 0 while the API is walked: raised,
/// the live API's pages differ from those mirrored.
private func eventsAPI(_ edition: SharedCounter) -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        if request.path.hasPrefix("/img/") {
            return FixtureResponse(headers: [("Content-Type", "image/png")], body: Array(cover(request.path).utf8))
        }
        if request.path == "/echo" {
            return .text("\(request.method) \(String(decoding: request.body, as: UTF8.self)) \(request.headers["x-app"] ?? "-")", status: 201)
        }
        let page = Int(request.parameter("page") ?? "") ?? 0
        guard (1...3).contains(page) else { return .json(#"{"list":[]}"#) }
        let records = [page * 10 + 1, page * 10 + 2].map {
            #"{"id":\#($0),"title":"event \#($0), edition \#(edition.value)","cover":"\#(request.base)/img/\#($0).png"}"#
        }
        let next = page < 3 ? #","next":"\#(request.base)/events?page=\#(page + 1)""# : ""
        return .json(#"{"list":[\#(records.joined(separator: ","))]\#(next)}"#, headers: [("X-Edition", "\(edition.value)")])
    }
}

/// The bytes of the image at `path`.
private func cover(_ path: String) -> String { "cover bytes of \(path)" }

private let eventsYAML = """
    version: 1
    jobs:
      - { name: events, url: "BASE/events?page={page}", records: list, id: id, table: t_event, downloads: [cover] }
    """

/// Walks the API at `server` into `folder/out` (its covers downloaded), publishes it with its
/// pages and files to `folder/pub` (or, with `snapshot`, makes a snapshot of it in
/// `folder/snap`), and syncs a replica in `folder/device` from there.
private func replicated(_ server: FixtureServer, in folder: String, snapshot: Bool = false, madeAt: String? = nil) async throws -> Replica {
    try eventsYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
    let ran = try await mirror(["run", "jobs.yaml", "--quiet", "--output", "out"], in: folder)
    #expect(ran.status == 0, "\(ran.stderr)")
    let source = folder + (snapshot ? "/snap" : "/pub")
    let made = try await mirror(snapshot ? ["snapshot", source, "--output", "out", "--with-pages", "--with-files"]
                                         : ["publish", "file://" + source, "--output", "out", "--with-files"], in: folder)
    #expect(made.status == 0, "\(made.stderr)")
    if let madeAt {
        // A snapshot made at another time: the time its manifest gives.
        let manifest = source + "/manifest.json"
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
            .replacing(#/"created_at" : "[^"]+"/#, with: #""created_at" : "\#(madeAt)""#)
        try text.write(toFile: manifest, atomically: true, encoding: .utf8)
    }
    let replica = try Replica(folder: URL(fileURLWithPath: folder + "/device"))
    try await replica.sync(from: URL(fileURLWithPath: source))
    return replica
}

/// A session whose requests the replica protocol sees first.
private func replicaSession() -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.protocolClasses = [ReplicaURLProtocol.self] + (configuration.protocolClasses ?? [])
    return URLSession(configuration: configuration)
}

/// What a session got: status, body, `ETag`, `X-Mirror-Replica` and the API's `X-Edition`.
private struct Got: Equatable, CustomStringConvertible {
    let status: Int
    let body: Data
    let etag: String?
    let replica: String?
    var edition: String? = nil

    var text: String { String(decoding: body, as: UTF8.self) }
    var description: String { "\(status) \(replica ?? "-") \(text)" }
}

private func get(_ session: URLSession, _ url: String) async throws -> Got {
    let (body, response) = try await session.data(for: URLRequest(url: URL(string: url)!))
    let http = try #require(response as? HTTPURLResponse)
    return Got(status: http.statusCode, body: body, etag: http.value(forHTTPHeaderField: "ETag"),
               replica: http.value(forHTTPHeaderField: "X-Mirror-Replica"), edition: http.value(forHTTPHeaderField: "X-Edition"))
}

/// The replica's own answer to `url`.
private func answer(_ replica: Replica, _ url: String) throws -> Got? {
    try replica.response(for: URLRequest(url: URL(string: url)!)).map {
        Got(status: $0.status, body: $0.body, etag: $0.header("ETag"), replica: $0.header("X-Mirror-Replica"), edition: $0.header("X-Edition"))
    }
}

/// Whether `error` is a transport error of the session (the API is down).
/// A transport error from a stopped API: refused, or, when its port was taken meanwhile by a
/// server another test started (the tests run side by side), reset. FoundationNetworking
/// (curl) reports a reset met on a connection it kept from before the stop as an error of
/// no known code, "Recv failure: Connection reset by peer".
private func unreachable(_ error: any Error) -> Bool {
    guard let code = (error as? URLError)?.code else { return false }
    return [.cannotConnectToHost, .networkConnectionLost].contains(code)
        || (code == .unknown && "\(error)".contains("Connection reset by peer"))
}

@Suite("an app's URLSession answered from a replica", .timeLimit(.minutes(6)))
struct ReplicaProtocolTests {
    @Test("the API stopped: a session pages through the API's URLs by each page's next link, and gets what the API and the replica gave")
    func pagesOffline() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let edition = SharedCounter()
        let (replica, base, live) = try await FixtureServer.with(eventsAPI(edition)) { server in
            let replica = try await replicated(server, in: folder)
            var live: [String: Data] = [:]
            for page in 1...3 {
                live["/events?page=\(page)"] = try await get(URLSession(configuration: .ephemeral), server.base + "/events?page=\(page)").body
            }
            return (replica, server.base, live)
        }
        let origin = URL(string: base)!
        ReplicaURLProtocol.register(replica, for: origin, policy: .cacheElseNetwork)
        defer { ReplicaURLProtocol.unregister(origin) }
        let session = replicaSession()
        var next: String? = base + "/events?page=1"
        var pages: [String] = []
        while let url = next {
            let got = try await get(session, url)
            let target = String(url.dropFirst(base.count))
            pages.append(target)
            #expect(got == (try answer(replica, url)), "\(target)")
            #expect(got.status == 200 && got.replica == replica.generation && got.etag?.hasPrefix("\"") == true, "\(target)")
            #expect(got.body == live[target], "\(target)")
            let envelope = try JSONSerialization.jsonObject(with: got.body) as? [String: Any]
            next = envelope?["next"] as? String
        }
        #expect(pages == ["/events?page=1", "/events?page=2", "/events?page=3"])
        #expect(String(decoding: live["/events?page=3"] ?? Data(), as: UTF8.self) == #"{"list":[{"id":31,"title":"event 31, edition 0","cover":"\#(base)/img/31.png"},"#
            + #"{"id":32,"title":"event 32, edition 0","cover":"\#(base)/img/32.png"}]}"#)

        // Asked again with its ETag: the replica's 304.
        var again = URLRequest(url: URL(string: base + "/events?page=2")!)
        again.setValue(try answer(replica, base + "/events?page=2")?.etag, forHTTPHeaderField: "If-None-Match")
        let (empty, notModified) = try await session.data(for: again)
        #expect((notModified as? HTTPURLResponse)?.statusCode == 304 && empty.isEmpty)
        // Not registered any more: the session sends it, and the stopped API cannot be reached.
        ReplicaURLProtocol.unregister(origin)
        await #expect { try await get(session, base + "/events?page=1") } throws: { unreachable($0) }
    }

    @Test("the API stopped: a record's cover URL is answered with the downloaded file's bytes and content type, from the replica")
    func filesOffline() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (replica, base) = try await FixtureServer.with(eventsAPI(SharedCounter())) { server in
            (try await replicated(server, in: folder), server.base)
        }
        let origin = URL(string: base)!
        ReplicaURLProtocol.register(replica, for: origin, policy: .cacheOnly)
        defer { ReplicaURLProtocol.unregister(origin) }
        let session = replicaSession()
        for id in [11, 12, 21, 22, 31, 32] {
            let (body, response) = try await session.data(for: URLRequest(url: URL(string: base + "/img/\(id).png")!))
            let http = try #require(response as? HTTPURLResponse)
            #expect(http.statusCode == 200, "cover \(id)")
            #expect(String(decoding: body, as: UTF8.self) == cover("/img/\(id).png"))
            #expect(http.value(forHTTPHeaderField: "Content-Type") == "image/png")
            #expect(http.value(forHTTPHeaderField: "X-Mirror-Replica") == replica.generation)
            let sha256 = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
            #expect(http.value(forHTTPHeaderField: "ETag") == "\"\(sha256)\"")
            // The local file: the generation's copy, under files/.
            let local = try #require(try replica.fileURL(for: URL(string: base + "/img/\(id).png")!))
            #expect(local.path.hasPrefix(folder + "/device/generations/\(replica.generation ?? "")/files/"))
            #expect(try Data(contentsOf: local) == body)
            var again = URLRequest(url: URL(string: base + "/img/\(id).png")!)
            again.setValue("\"\(sha256)\"", forHTTPHeaderField: "If-None-Match")
            let (empty, notModified) = try await session.data(for: again)
            #expect((notModified as? HTTPURLResponse)?.statusCode == 304 && empty.isEmpty)
        }
        #expect(try await get(session, base + "/img/99.png").status == 504)
        #expect(try replica.fileURL(for: URL(string: base + "/img/99.png")!) == nil)
        #expect(try replica.fileURL(for: URL(string: base + "/events?page=1")!) == nil)
    }

    @Test("cacheOnly: the replica's answer, API up or down; a request it holds no answer to gets the 504, and the API is never asked")
    func cacheOnly() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let edition = SharedCounter()
        let session = replicaSession()
        let (replica, base) = try await FixtureServer.with(eventsAPI(edition)) { server in
            let replica = try await replicated(server, in: folder)
            edition.increment()
            ReplicaURLProtocol.register(replica, for: URL(string: server.base)!, policy: .cacheOnly)
            let asked = server.requests.count
            let page = try await get(session, server.base + "/events?page=1")
            #expect(page == (try answer(replica, server.base + "/events?page=1")))
            #expect(page.replica == replica.generation && page.text.contains("edition 0"))
            let miss = try await get(session, server.base + "/events?page=9")
            #expect(miss == Got(status: 504, body: Data(ReplicaURLProtocol.missText.utf8), etag: nil, replica: nil))
            #expect(server.requests.count == asked)
            return (replica, server.base)
        }
        defer { ReplicaURLProtocol.unregister(URL(string: base)!) }
        #expect(try await get(session, base + "/events?page=2") == (try answer(replica, base + "/events?page=2")))
        #expect(try await get(session, base + "/events?page=9").status == 504)
    }

    @Test("cacheElseNetwork: the replica's answer while it holds one, else the API's, without X-Mirror-Replica; the API down, a transport error")
    func cacheElseNetwork() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let edition = SharedCounter()
        let session = replicaSession()
        let base = try await FixtureServer.with(eventsAPI(edition)) { server in
            let replica = try await replicated(server, in: folder)
            edition.increment()
            ReplicaURLProtocol.register(replica, for: URL(string: server.base)!, policy: .cacheElseNetwork)
            let asked = server.requests.count
            let page = try await get(session, server.base + "/events?page=1")
            #expect(page.replica == replica.generation && page.text.contains("edition 0"))
            #expect(server.requests.count == asked)
            let unknown = try await get(session, server.base + "/events?page=7")
            #expect(unknown == Got(status: 200, body: Data(#"{"list":[]}"#.utf8), etag: nil, replica: nil))
            #expect(server.requests.dropFirst(asked).map(\.target) == ["/events?page=7"])
            // The request goes on as the app made it (method, headers, body), the answer comes back as the API gave it.
            var post = URLRequest(url: URL(string: server.base + "/echo")!)
            post.httpMethod = "POST"
            post.httpBody = Data("hello".utf8)
            post.setValue("kiosk", forHTTPHeaderField: "X-App")
            let (echoed, response) = try await session.data(for: post)
            let http = try #require(response as? HTTPURLResponse)
            #expect(http.statusCode == 201 && http.value(forHTTPHeaderField: "Content-Type") == "text/plain")
            #expect(String(decoding: echoed, as: UTF8.self) == "POST hello kiosk")
            #expect(http.value(forHTTPHeaderField: "X-Mirror-Replica") == nil)
            return server.base
        }
        defer { ReplicaURLProtocol.unregister(URL(string: base)!) }
        #expect(try await get(session, base + "/events?page=3").text.contains("edition 0"))
        await #expect { try await get(session, base + "/events?page=7") } throws: { unreachable($0) }
    }

    @Test("networkElseCache: the API up, its live answer, without X-Mirror-Replica; the API down, the replica's")
    func networkElseCache() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let edition = SharedCounter()
        let session = replicaSession()
        let (replica, base) = try await FixtureServer.with(eventsAPI(edition)) { server in
            let replica = try await replicated(server, in: folder)
            edition.increment()
            ReplicaURLProtocol.register(replica, for: URL(string: server.base)!, policy: .networkElseCache)
            let page = try await get(session, server.base + "/events?page=1")
            #expect(page.replica == nil && page.etag == nil && page.edition == "1")
            #expect(page.text == #"{"list":[{"id":11,"title":"event 11, edition 1","cover":"\#(server.base)/img/11.png"},"#
                + #"{"id":12,"title":"event 12, edition 1","cover":"\#(server.base)/img/12.png"}],"next":"\#(server.base)/events?page=2"}"#)
            return (replica, server.base)
        }
        defer { ReplicaURLProtocol.unregister(URL(string: base)!) }
        let offline = try await get(session, base + "/events?page=1")
        #expect(offline == (try answer(replica, base + "/events?page=1")))
        #expect(offline.replica == replica.generation && offline.text.contains("edition 0") && offline.edition == "0")
        // Neither can answer: the transport error.
        await #expect { try await get(session, base + "/events?page=9") } throws: { unreachable($0) }
    }

    @Test("maxAge: a young generation answers with the API up; an old one leaves it to the API, and answers once the API is down")
    func maxAge() async throws {
        let edition = SharedCounter()
        let session = replicaSession()
        for old in [false, true] {
            let folder = try temporaryFolder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let (replica, base) = try await FixtureServer.with(eventsAPI(edition)) { server in
                edition.increment()
                let replica: Replica
                if old {
                    replica = try await replicated(server, in: folder, snapshot: true, madeAt: "2020-01-01T00:00:00.000Z")
                    #expect(replica.createdAt == Date(timeIntervalSince1970: 1_577_836_800))
                } else {
                    replica = try await replicated(server, in: folder)
                    // The published shard's snapshot manifest gives the time.
                    let shard = try Data(contentsOf: URL(fileURLWithPath: folder + "/device/current/shards/0/manifest.json"))
                    let made = try #require((try JSONSerialization.jsonObject(with: shard) as? [String: Any])?["created_at"] as? String)
                    let formatter = ISO8601DateFormatter()
                    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                    #expect(replica.createdAt == formatter.date(from: made))
                }
                edition.increment()
                ReplicaURLProtocol.register(replica, for: URL(string: server.base)!, policy: .maxAge(3600))
                let page = try await get(session, server.base + "/events?page=2")
                if old {
                    #expect(page.replica == nil && page.text.contains("edition \(edition.value)"), "\(page)")
                } else {
                    #expect(page == (try answer(replica, server.base + "/events?page=2")))
                    #expect(page.replica == replica.generation && page.text.contains("edition \(edition.value - 1)"), "\(page)")
                }
                return (replica, server.base)
            }
            defer { ReplicaURLProtocol.unregister(URL(string: base)!) }
            let offline = try await get(session, base + "/events?page=2")
            #expect(offline == (try answer(replica, base + "/events?page=2")), "old: \(old)")
            #expect(offline.replica == replica.generation, "old: \(old)")
        }
    }
}
