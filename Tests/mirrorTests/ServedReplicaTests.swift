import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MirrorDevice
import MirrorModel
import MirrorTestSupport
import Testing

/// An API of 3 pages of 2 records walked by `mirror run` into `folder/out`; returns the API's
/// base URL, which the pages are stored under (the API is stopped after).
func walkedAPI(in folder: String) async throws -> String {
    try await FixtureServer.with({ request in
        let page = Int(request.parameter("page") ?? "") ?? 0
        guard (1...3).contains(page) else { return .json(#"{"list":[]}"#) }
        let next = page < 3 ? #","next":"\#(request.base)/events?page=\#(page + 1)""# : ""
        return .json(#"{"list":[{"id":\#(page * 10 + 1),"name":"a"},{"id":\#(page * 10 + 2),"name":"b"}]\#(next)}"#)
    }) { server in
        try """
            version: 1
            jobs:
              - { name: events, url: "\(server.base)/events?page={page}", records: list, id: id, table: t_event }
            """.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
        let ran = try await mirror(["run", "jobs.yaml", "--quiet", "--output", "out"], in: folder)
        #expect(ran.status == 0, "\(ran.stderr)")
        return server.base
    }
}

/// An object of a published generation: its path under the prefix and its bytes.
struct PublishedObject {
    let path: String
    let bytes: Data

    var sha256: String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    /// Where a replica's generation holds it: a shard's manifest as `shards/0/manifest.json`,
    /// a database by its name.
    var pathInReplica: String {
        path.hasSuffix("/manifest.json") ? "shards/0/manifest.json" : (path as NSString).lastPathComponent
    }
}

/// Syncs replicas from `source`, a published prefix that a server answers at `target` (the
/// path of `source` on the server), and checks each step against the server's request log
/// (`log()`, one `METHOD TARGET STATUS RANGE` a request, `-` for no Range):
/// - a first sync fetches the manifest and each object once, and holds each object's bytes;
/// - the replica answers the API's pages (`api`, as `walkedAPI` walked them) naming its generation;
/// - an unchanged sync is one request, answered 304;
/// - another replica holding the first half of the database asks for the rest with Range: a 206.
func expectSyncs(from source: URL, target: String, objects: [PublishedObject], api: String, in folder: String,
                 log: () throws -> [String]) async throws {
    let replica = try Replica(folder: URL(fileURLWithPath: folder + "/device"))
    var before = try log().count
    let first = try await replica.sync(from: source)
    #expect(first.changed && first.fetchedObjects == objects.count && first.keptObjects == 0 && !first.manifestUnchanged)
    #expect(first.fetchedBytes == Int64(objects.reduce(0) { $0 + $1.bytes.count }))
    #expect(try log().dropFirst(before).sorted()
        == (["GET \(target)manifest.json 200 -"] + objects.map { "GET \(target)\($0.path) 200 -" }).sorted())
    #expect(replica.generation == first.generation)
    let generation = folder + "/device/generations/" + first.generation
    for object in objects {
        #expect(FileManager.default.contents(atPath: generation + "/" + object.pathInReplica) == object.bytes, "\(object.path)")
    }

    for page in 1...3 {
        let answer = try #require(try replica.response(for: URLRequest(url: URL(string: "\(api)/events?page=\(page)")!)))
        let next = page < 3 ? #","next":"\#(api)/events?page=\#(page + 1)""# : ""
        #expect(answer.status == 200 && answer.header("X-Mirror-Replica") == first.generation)
        #expect(String(decoding: answer.body, as: UTF8.self)
            == #"{"list":[{"id":\#(page * 10 + 1),"name":"a"},{"id":\#(page * 10 + 2),"name":"b"}]\#(next)}"#, "page \(page)")
    }
    #expect(try replica.response(for: URLRequest(url: URL(string: "\(api)/events?page=9")!)) == nil)

    before = try log().count
    let second = try await replica.sync(from: source)
    #expect(second.generation == first.generation && !second.changed && second.fetchedObjects == 0 && second.fetchedBytes == 0)
    #expect(second.keptObjects == objects.count && second.manifestUnchanged)
    #expect(Array(try log().dropFirst(before)) == ["GET \(target)manifest.json 304 -"])

    // A sync that was stopped had fetched the first half of the database.
    let database = try #require(objects.first { $0.path.hasSuffix(".sqlite") })
    let resumed = try Replica(folder: URL(fileURLWithPath: folder + "/resumed"))
    let half = database.bytes.count / 2
    try database.bytes.prefix(half).write(to: URL(fileURLWithPath: folder + "/resumed/partial/" + database.sha256))
    before = try log().count
    let third = try await resumed.sync(from: source)
    #expect(third.generation == first.generation && third.fetchedObjects == objects.count)
    #expect(try log().dropFirst(before).sorted()
        == (["GET \(target)manifest.json 200 -", "GET \(target)\(database.path) 206 bytes=\(half)-"]
            + objects.filter { $0.path != database.path }.map { "GET \(target)\($0.path) 200 -" }).sorted())
    #expect(FileManager.default.contents(atPath: folder + "/resumed/generations/\(third.generation)/" + database.pathInReplica)
        == database.bytes)
}

/// Debian's nginx serving a folder on 127.0.0.1, in the foreground (`daemon off`, one process,
/// so it keeps the user it was started as, root or not), with its configuration, pid, logs
/// and temporary files in a folder of its own. Its access log has one line a request:
/// `METHOD TARGET STATUS RANGE`.
struct Nginx {
    static let binary = "/usr/sbin/nginx"

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let child: Child
    let port: Int
    let folder: String

    /// Runs nginx serving `root` for `body`, its files in `folder`, and stops it after.
    static func with<T>(serving root: String, in folder: String, _ body: (Nginx) async throws -> T) async throws -> T {
        let nginx = try await start(serving: root, in: folder)
        do {
            let result = try await body(nginx)
            await nginx.stop()
            return result
        } catch {
            await nginx.stop()
            throw error
        }
    }

    private static func start(serving root: String, in folder: String) async throws -> Nginx {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw Failure(description: "\(binary) is missing: install Debian's nginx package (scripts/test.sh installs it)")
        }
        try FileManager.default.createDirectory(atPath: folder + "/temp", withIntermediateDirectories: true)
        var said = ""
        // A free port, then nginx on it: another process may take it in between, so a few tries.
        for _ in 0..<5 {
            let port = try freePort()
            let temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map { "\($0)_temp_path \(folder)/temp/\($0);" }
            try """
                daemon off;
                master_process off;
                pid \(folder)/nginx.pid;
                error_log \(folder)/error.log;
                events { worker_connections 64; }
                http {
                    log_format requests '$request_method $request_uri $status $http_range';
                    access_log \(folder)/access.log requests;
                    \(temp.joined(separator: "\n        "))
                    default_type application/octet-stream;
                    server { listen 127.0.0.1:\(port); root \(root); }
                }
                """.write(toFile: folder + "/nginx.conf", atomically: true, encoding: .utf8)
            let child = try Child(binary, ["-p", folder + "/", "-c", folder + "/nginx.conf", "-e", folder + "/error.log"],
                                  in: folder, environment: [:], stderr: folder + "/stderr.log")
            for _ in 0..<1000 {
                if listening(port) { return Nginx(child: child, port: port, folder: folder) }
                var status: Int32 = 0
                if waitpid(child.pid, &status, WNOHANG) == child.pid { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            kill(child.pid, SIGKILL)
            _ = await child.ending()
            said = ((try? String(contentsOfFile: folder + "/error.log", encoding: .utf8)) ?? "")
                + ((try? String(contentsOfFile: folder + "/stderr.log", encoding: .utf8)) ?? "")
            guard said.contains("Address already in use") else { break }
        }
        throw Failure(description: "nginx did not start: \(said.suffix(2000))")
    }

    /// The access log's lines so far.
    func requests() throws -> [String] {
        let log = (try? String(contentsOfFile: folder + "/access.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").map(String.init)
    }

    /// SIGKILL: nginx's one process keeps the signal mask it was started with, and the test
    /// process's threads block SIGTERM and SIGQUIT, so it would never see them.
    func stop() async {
        kill(child.pid, SIGKILL)
        _ = await child.ending()
    }

    /// A port nothing listens on now, as the kernel picks one.
    private static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = loopback(0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "no free port on 127.0.0.1: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func listening(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = loopback(port)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

@Suite("a replica synced from real servers", .timeLimit(.minutes(6)))
struct ServedReplicaTests {
    @Test("a prefix published to a folder and served by nginx: objects whole, pages answered; unchanged, one request and its 304; a half fetched object resumed with a 206")
    func fromNginx() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let api = try await walkedAPI(in: folder)
        let root = folder + "/www/pub/events"
        let published = try await mirror(["publish", "file://" + root, "--output", "out"], in: folder)
        #expect(published.status == 0, "\(published.stderr)")
        let manifest = try PublishManifest.decoded(Array(try Data(contentsOf: URL(fileURLWithPath: root + "/manifest.json"))))
        let objects = try (manifest.entries.first?.objects ?? []).map { object in
            let path = object.path ?? object.key
            return PublishedObject(path: path, bytes: try Data(contentsOf: URL(fileURLWithPath: root + "/" + path)))
        }
        #expect(objects.count == 2)
        try await Nginx.with(serving: folder + "/www", in: folder + "/nginx") { nginx in
            try await expectSyncs(from: URL(string: "http://127.0.0.1:\(nginx.port)/pub/events/")!, target: "/pub/events/",
                                  objects: objects, api: api, in: folder, log: nginx.requests)
        }
    }
}
