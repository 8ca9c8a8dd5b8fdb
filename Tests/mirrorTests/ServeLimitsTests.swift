import Foundation
@testable import MirrorJobFile
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

/// Page 1: `recordCount` records of about 1 KB each (about 6 MB: past the 256 KB a page may
/// hold to be answered whole, and past what the kernel buffers for a loopback connection,
/// a few MB); then an empty page.
private let recordCount = 6000
private let filler = String(repeating: "x", count: 1000)

private let bigPageAPI: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
    guard request.parameter("page") == "1" else { return .json(#"{"data":[]}"#) }
    return .json(#"{"data":[\#((1...recordCount).map { #"{"id":\#($0),"text":"\#(filler)"}"# }.joined(separator: ","))]}"#)
}

/// The big page walked once by `mirror run`, for every test here; its folder is removed
/// when the test process exits.
private let walkedBigPage = Task {
    let folder = try await walkBigPage()
    walkedFolder.withLock { $0 = folder }
    atexit {
        if let folder = walkedFolder.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: folder) }
    }
    return folder
}

private let walkedFolder = Mutex<String?>(nil)

/// A folder of its own whose `out/` holds the big page; the caller removes it.
private func mirroredBigPage() async throws -> String {
    let walked = try await walkedBigPage.value
    let folder = try temporaryFolder()
    do {
        try FileManager.default.copyItem(atPath: walked + "/out", toPath: folder + "/out")
    } catch {
        try? FileManager.default.removeItem(atPath: folder)
        throw error
    }
    return folder
}

/// A folder whose `out/` holds the big page, walked by `mirror run`.
private func walkBigPage() async throws -> String {
    let folder = try temporaryFolder()
    do {
        try await walk(into: folder)
    } catch {
        try? FileManager.default.removeItem(atPath: folder)
        throw error
    }
    return folder
}

private func walk(into folder: String) async throws {
    try await FixtureServer.with(bigPageAPI) { server in
        try """
            version: 1
            output: out
            jobs:
              - name: items
                url: "\(server.base)/items?page={page}"
                records: data
                id: id
                table: t_item
            """.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
        let run = try await mirror(["run", "jobs.yaml", "--quiet"], in: folder)
        #expect(run.status == 0, Comment(rawValue: run.stderr))
    }
}

/// `mirror serve --port 0` on `folder/out` with `arguments`, under a limit on open files if
/// `openFiles` is given; its port once it said it.
private func startServe(in folder: String, _ arguments: [String], openFiles: Int? = nil) async throws -> (Child, Int) {
    let serve = ["serve", "--output", "out", "--port", "0"] + arguments
    let child: Child
    if let openFiles {
        // The shell lowers the limit for itself and the mirror it becomes.
        child = try Child("/bin/sh", ["-c", "ulimit -n \(openFiles) && exec \"$0\" \"$@\"", mirrorBinary.path] + serve,
                          in: folder, environment: ProcessInfo.processInfo.environment, stderr: folder + "/serve.err")
    } else {
        child = try Child(mirrorBinary.path, serve, in: folder, environment: ProcessInfo.processInfo.environment,
                          stderr: folder + "/serve.err")
    }
    for _ in 0..<3000 {
        let said = (try? String(contentsOfFile: folder + "/serve.err", encoding: .utf8)) ?? ""
        if let port = said.firstMatch(of: #/serving 'out' on http://127.0.0.1:([0-9]+)/_mirror/tables/#).flatMap({ Int($0.1) }) {
            return (child, port)
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    kill(child.pid, SIGKILL)
    _ = await child.ending()
    throw ServeDidNotListen(said: (try? String(contentsOfFile: folder + "/serve.err", encoding: .utf8)) ?? "")
}

private struct ServeDidNotListen: Error, CustomStringConvertible {
    let said: String
    var description: String { "serve said no port: \(said)" }
}

/// Runs `body` with serve started as `startServe` starts it; a serve still running when
/// `body` throws is killed.
private func withServe(in folder: String, _ arguments: [String], openFiles: Int? = nil,
                       _ body: (Child, Int) async throws -> Void) async throws {
    let (serve, port) = try await startServe(in: folder, arguments, openFiles: openFiles)
    do {
        try await body(serve, port)
    } catch {
        kill(serve.pid, SIGKILL)
        _ = await serve.ending()
        throw error
    }
}

/// How `child` ended, or `.signaled(SIGKILL)` if it was still running `limit` later (it is
/// killed then).
private func ending(of child: Child, within limit: Duration) async -> Child.Ending {
    let watchdog = Task {
        try await Task.sleep(for: limit)
        kill(child.pid, SIGKILL)
    }
    defer { watchdog.cancel() }
    return await child.ending()
}

/// A TCP client on a plain socket, so the test chooses its receive buffer and when it reads.
private final class RawClient: Sendable {
    let descriptor: Int32

    /// Connects to 127.0.0.1:`port`; `receiveBuffer` is set before connecting, so the window
    /// the client offers stays that small.
    init(port: Int, receiveBuffer: Int32? = nil) throws {
        // Assigned only once connected: a failed init runs no deinit that could close a
        // descriptor number opened elsewhere since.
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            close(descriptor)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let done = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard done > 0 else { return }
            sent += done
        }
    }

    /// Reads what arrives until the server closes the connection (nil if it has not
    /// `limit` later), at most `upTo` bytes, or until `until` holds for what was read. The
    /// waiting is done on a thread of its own, not on the tasks' threads. With `pace`, the
    /// client reads 16 KB at a time and waits that long after each read: slower than the
    /// server sends, so the server still holds bytes of the response when it has written its end.
    func read(upTo: Int = .max, within limit: Duration, pace: Duration? = nil,
              until: @escaping @Sendable ([UInt8]) -> Bool = { _ in false }) async -> [UInt8]? {
        await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: self.blockingRead(upTo: upTo, within: limit, pace: pace, until: until))
            }.start()
        }
    }

    /// Whether the server reset the connection within `limit`, waited for without reading.
    func wasReset(within limit: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread {
                let deadline = ContinuousClock.now + limit
                while ContinuousClock.now < deadline {
                    var poller = pollfd(fd: self.descriptor, events: 0, revents: 0)
                    if poll(&poller, 1, 50) > 0, poller.revents & Int16(POLLHUP | POLLERR) != 0 {
                        continuation.resume(returning: true)
                        return
                    }
                }
                continuation.resume(returning: false)
            }.start()
        }
    }

    private func blockingRead(upTo: Int, within limit: Duration, pace: Duration?, until: ([UInt8]) -> Bool) -> [UInt8]? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: pace == nil ? 1 << 16 : 1 << 14)
        let deadline = ContinuousClock.now + limit
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)) > 0 else {
                continue
            }
            let wanted = min(buffer.count, upTo - received.count)
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, wanted, 0) }
            // The end of the connection: closed (0), or reset (what was not read is lost).
            if count == 0 { return received }
            if count < 0 { return errno == ECONNRESET ? [] : nil }
            received += buffer.prefix(count)
            if received.count >= upTo || until(received) { return received }
            if let pace { Thread.sleep(forTimeInterval: Double(pace.components.attoseconds) / 1e18 + Double(pace.components.seconds)) }
        }
    }
}

private func request(_ target: String, close: Bool = false) -> String {
    "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n"
}

/// The big page, asked for by a client with a 4 KB receive buffer that reads its status
/// line and then nothing; with `then`, those pages asked for right behind it.
private func stalledClient(port: Int, then more: [String] = []) async throws -> RawClient {
    let client = try RawClient(port: port, receiveBuffer: 4096)
    client.send((["/items?page=1"] + more).map { request($0) }.joined())
    let status = try #require(await client.read(upTo: 17, within: .seconds(30)))
    #expect(String(decoding: status, as: UTF8.self) == "HTTP/1.1 200 OK\r\n")
    return client
}

/// SIGTERM to `serve`, then, once it refuses new connections (the signal was taken), what
/// `client` receives until serve closes the connection, read slowly: the response's end is
/// written while bytes before it still wait to leave, and the connection must close only once
/// they have.
private func stop(_ serve: Child, port: Int, thenSlowlyRead client: RawClient) async throws -> [UInt8] {
    kill(serve.pid, SIGTERM)
    while (try? RawClient(port: port)) != nil { try await Task.sleep(for: .milliseconds(20)) }
    return try #require(await client.read(within: .seconds(60), pace: .milliseconds(1)))
}

/// The resident size of process `pid`, in KB.
private func residentKB(_ pid: pid_t) throws -> Int {
    let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
    let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
    return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
}

@Suite("serve's limits on a connection", .timeLimit(.minutes(6)))
struct ServeLimitsTests {
    @Test("SIGTERM while a client stops reading a large page: serve cuts the page and exits 0 after --stop-grace",
          .timeLimit(.minutes(6)))
    func stopWhileStalled() async throws {
        let folder = try await mirroredBigPage()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await withServe(in: folder, ["--stop-grace", "1s"]) { serve, port in
            let client = try await stalledClient(port: port)
            kill(serve.pid, SIGTERM)
            #expect(await ending(of: serve, within: .seconds(60)) == .exited(0))
            // What the client had not read yet, then the end of the connection: the page was cut.
            let rest = try #require(await client.read(within: .seconds(30)))
            #expect(!rest.isEmpty && !String(decoding: rest.suffix(5), as: UTF8.self).hasSuffix("0\r\n\r\n"))
        }
    }

    @Test("SIGTERM while a client reads a large page slowly: serve sends the page whole, closes the connection and exits 0",
          .timeLimit(.minutes(6)))
    func stopAnswersInFlight() async throws {
        let folder = try await mirroredBigPage()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await withServe(in: folder, ["--stop-grace", "10m", "--send-timeout", "10m"]) { serve, port in
            // The page is still sent whole after the signal.
            let rest = try await stop(serve, port: port, thenSlowlyRead: try await stalledClient(port: port))
            #expect(rest.count > recordCount * 1000)
            #expect(String(decoding: rest.suffix(5), as: UTF8.self) == "0\r\n\r\n")
            #expect(await ending(of: serve, within: .seconds(60)) == .exited(0))
        }
    }

    @Test("SIGTERM while a client reads a large page slowly, a second request sent behind it: both are answered whole, then the connection closes",
          .timeLimit(.minutes(6)))
    func stopAnswersPipelined() async throws {
        let folder = try await mirroredBigPage()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await withServe(in: folder, ["--stop-grace", "10m", "--send-timeout", "10m"]) { serve, port in
            let client = try await stalledClient(port: port, then: ["/items?page=2"])
            let rest = try await stop(serve, port: port, thenSlowlyRead: client)
            // The big page's last chunk, then the second answer: its head, and a body as long as it says.
            let text = String(decoding: rest, as: UTF8.self)
            let parts = text.components(separatedBy: "\r\n0\r\n\r\n")
            #expect(parts.count == 2 && parts[0].count > recordCount * 1000)
            let second = parts.last ?? ""
            let head = second.components(separatedBy: "\r\n\r\n").first ?? ""
            #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(head)")
            let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length: ") }
                .flatMap { Int($0.dropFirst("content-length: ".count)) }
            #expect(length.map { second.utf8.count == head.utf8.count + 4 + $0 } == true, "\(second)")
            #expect(await ending(of: serve, within: .seconds(60)) == .exited(0))
        }
    }

    @Test("a second SIGTERM stops serve at once, with 143, while a client stops reading and the grace is long",
          .timeLimit(.minutes(6)))
    func secondSignal() async throws {
        let folder = try await mirroredBigPage()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await withServe(in: folder, ["--stop-grace", "10m", "--send-timeout", "10m"]) { serve, port in
            let client = try await stalledClient(port: port)
            kill(serve.pid, SIGTERM)
            // The first signal was taken once serve refuses new connections.
            while (try? RawClient(port: port)) != nil { try await Task.sleep(for: .milliseconds(20)) }
            kill(serve.pid, SIGTERM)
            #expect(await ending(of: serve, within: .seconds(60)) == .exited(143))
            #expect(await client.read(within: .seconds(30)) != nil)
        }
    }

    @Test("clients that stop reading a large page hold little of serve's memory, and are dropped after --send-timeout",
          .timeLimit(.minutes(6)))
    func stalledClientsDropped() async throws {
        let folder = try await mirroredBigPage()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await withServe(in: folder, ["--send-timeout", "2s"]) { serve, port in
            // The whole page once, to the chunked body's end: serve's resting size is taken after it.
            let reader = try RawClient(port: port)
            reader.send(request("/items?page=1", close: true))
            let first = try #require(await reader.read(within: .seconds(30)))
            #expect(first.count > recordCount * 1000 && String(decoding: first.suffix(5), as: UTF8.self) == "0\r\n\r\n")
            let resting = try residentKB(serve.pid)
            // 40 clients that stop reading: each holds a piece of the page, what its connection
            // buffers and a database connection (the page is 6 MB). Each held 2 MB and more
            // when a database connection kept SQLite's default cache; the bound leaves room
            // for what the allocator keeps while they come (a few hundred KB each, measured).
            var stalled: [RawClient] = []
            for _ in 0..<40 { stalled.append(try await stalledClient(port: port)) }
            let grown = try residentKB(serve.pid) - resting
            #expect(grown < 40 * 1200, "serve grew by \(grown) KB for 40 stalled clients")
            // Each is dropped: its connection is reset (seen without reading, which would
            // let serve send more).
            for client in stalled {
                #expect(await client.wasReset(within: .seconds(30)))
            }
            // serve still answers: the whole page, to the chunked body's end.
            let after = try RawClient(port: port)
            after.send(request("/items?page=1", close: true))
            let whole = try #require(await after.read(within: .seconds(30)))
            #expect(String(decoding: whole.prefix(17), as: UTF8.self) == "HTTP/1.1 200 OK\r\n")
            #expect(whole.count > recordCount * 1000 && String(decoding: whole.suffix(5), as: UTF8.self) == "0\r\n\r\n")
            kill(serve.pid, SIGTERM)
            #expect(await ending(of: serve, within: .seconds(60)) == .exited(0))
        }
    }

    @Test("more idle connections than serve may open files: they are closed after --idle-timeout, and a client that asks is answered",
          .timeLimit(.minutes(6)))
    func idleConnectionsUnderFileLimit() async throws {
        let folder = try await mirroredBigPage()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await withServe(in: folder, ["--idle-timeout", "1s"], openFiles: 64) { serve, port in
            var idle: [RawClient] = []
            for _ in 0..<80 { idle.append(try RawClient(port: port)) }
            // Behind them in the queue of connections to accept: a client asking for the page.
            let asking = try RawClient(port: port)
            asking.send(request("/_mirror/tables", close: true))
            let answer = try #require(await asking.read(within: .seconds(60)))
            #expect(String(decoding: answer.prefix(17), as: UTF8.self) == "HTTP/1.1 200 OK\r\n")
            #expect(String(decoding: answer, as: UTF8.self).contains(#""records" : \#(recordCount)"#))
            // Every idle connection was closed by serve, none answered.
            for client in idle {
                #expect(await client.read(within: .seconds(60)) == [])
            }
            kill(serve.pid, SIGTERM)
            #expect(await ending(of: serve, within: .seconds(60)) == .exited(0))
        }
    }

    @Test("a request head sent a byte at a time is closed after --header-timeout; a connection between requests waits for --idle-timeout",
          .timeLimit(.minutes(6)))
    func slowHeaders() async throws {
        let folder = try await mirroredBigPage()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await withServe(in: folder, ["--header-timeout", "1s", "--idle-timeout", "10m"]) { serve, port in
            let slow = try RawClient(port: port)
            // A first request answered at once; the limit counts from the next head's first
            // byte, not from this one's.
            slow.send(request("/_mirror/tables"))
            let first = try #require(await slow.read(within: .seconds(30)) { String(decoding: $0, as: UTF8.self).hasSuffix("]\n}\n") })
            #expect(String(decoding: first.prefix(17), as: UTF8.self) == "HTTP/1.1 200 OK\r\n")
            try await Task.sleep(for: .milliseconds(600))
            let head = Array(request("/_mirror/tables"))
            var sent = 0
            var closed = false
            let began = ContinuousClock.now
            // A byte every 200 ms: the head would take 9 s; serve closes it first, a second
            // after its first byte (however late this client sees it), not a second after
            // the first request's.
            while sent < head.count - 1, !closed {
                slow.send(String(head[sent]))
                sent += 1
                try await Task.sleep(for: .milliseconds(200))
                var poller = pollfd(fd: slow.descriptor, events: Int16(POLLIN), revents: 0)
                closed = poll(&poller, 1, 0) > 0
            }
            let closedAfter = ContinuousClock.now - began
            #expect(closed)
            #expect(closedAfter >= .seconds(1), "closed \(closedAfter) after the head's first byte")
            #expect(await slow.read(within: .seconds(30)) == [])
            // A client that sends its head at once is answered, and its connection kept.
            let quick = try RawClient(port: port)
            quick.send(request("/_mirror/tables"))
            let answer = try #require(await quick.read(within: .seconds(30)) { String(decoding: $0, as: UTF8.self).hasSuffix("]\n}\n") })
            #expect(String(decoding: answer.prefix(17), as: UTF8.self) == "HTTP/1.1 200 OK\r\n")
            // Its connection was kept: it answers the next request too.
            quick.send(request("/_mirror/tables", close: true))
            let again = try #require(await quick.read(within: .seconds(30)))
            #expect(String(decoding: again.prefix(17), as: UTF8.self) == "HTTP/1.1 200 OK\r\n")
            kill(serve.pid, SIGTERM)
            #expect(await ending(of: serve, within: .seconds(60)) == .exited(0))
        }
    }
}
