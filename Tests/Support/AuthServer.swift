import AsyncHTTPClient
package import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// One of the real servers of `scripts/auth-servers/` (django-oauth-toolkit, a botocore
/// SigV4 verifier), run on 127.0.0.1 by the Python that `scripts/auth-servers/setup.sh`
/// prepares and `MIRROR_TEST_PYTHON` names (`scripts/test.sh` sets it). It prints one JSON
/// line when ready and exits when its stdin closes, so a test that dies leaves no server.
package final class AuthServer: Sendable {
    /// The Python the servers run on; none: the tests that need them are not run.
    package static var python: String? {
        ProcessInfo.processInfo.environment["MIRROR_TEST_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The repository's `scripts/auth-servers/`.
    package static let scripts: String = {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/auth-servers").path
    }()

    /// The ready line, as JSON text.
    package let ready: String
    package let pid: pid_t
    private let input: Int32

    private init(ready: String, pid: pid_t, input: Int32) {
        self.ready = ready
        self.pid = pid
        self.input = input
    }

    /// The string (or number, as text) at `path` in the ready line.
    package func value(_ path: String...) -> String? {
        var value: Any? = try? JSONSerialization.jsonObject(with: Data(ready.utf8))
        for key in path { value = (value as? [String: Any])?[key] }
        if let text = value as? String { return text }
        if let number = value as? NSNumber { return number.stringValue }
        return nil
    }

    /// `http://127.0.0.1:PORT`.
    package var base: String { "http://127.0.0.1:\(value("port") ?? "0")" }

    package enum Failure: Error, CustomStringConvertible {
        case noPython
        case notReady(String)

        package var description: String {
            switch self {
            case .noPython: "MIRROR_TEST_PYTHON is not set: run scripts/auth-servers/setup.sh and set it to the python it prints"
            case let .notReady(why): "the server did not start: \(why)"
            }
        }
    }

    /// Runs `script` (a file of `scripts/auth-servers/`) with `arguments` for `body`, and
    /// stops it after, however `body` ends.
    package static func with<T: Sendable>(_ script: String, _ arguments: [String],
                                         _ body: (AuthServer) async throws -> T) async throws -> T {
        let server = try await start(script, arguments)
        let result: Result<T, any Error>
        do {
            result = .success(try await body(server))
        } catch {
            result = .failure(error)
        }
        // Its exit is waited for on a thread of its own, not on one of the tasks'.
        _ = try? await onThreadOfItsOwn { server.stop() }
        return try result.get()
    }

    /// Runs `body` with the one server of `script` that the whole test process shares: the
    /// first test to ask starts it, and it runs until the process ends (its stdin closes
    /// then, and it exits). Tests that share it must not share its state: each S3 test uses a
    /// bucket of its own. Starting moto takes about two seconds of CPU; a server for each of
    /// twenty S3 tests, all started at once, starved the timing tests of a 2-core machine.
    package static func withShared<T: Sendable>(_ script: String, _ body: (AuthServer) async throws -> T) async throws -> T {
        try await body(try await shared(script))
    }

    private static let started = Mutex<[String: Task<AuthServer, any Error>]>([:])

    private static func shared(_ script: String) async throws -> AuthServer {
        let task = started.withLock { started in
            if let task = started[script] { return task }
            let task = Task { try await start(script, []) }
            started[script] = task
            return task
        }
        return try await task.value
    }

    private static func start(_ script: String, _ arguments: [String]) async throws -> AuthServer {
        guard let python else { throw Failure.noPython }
        var stdinPipe: [Int32] = [0, 0], stdoutPipe: [Int32] = [0, 0]
        guard pipe(&stdinPipe) == 0, pipe(&stdoutPipe) == 0 else { throw Failure.notReady("no pipe") }
        let errors = NSTemporaryDirectory() + "mirror-auth-server-\(UUID().uuidString).log"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        for descriptor in stdinPipe + stdoutPipe { posix_spawn_file_actions_addclose(&actions, descriptor) }
        let argv = [python, scripts + "/" + script] + arguments
        var cArgv = argv.map { strdup($0) } + [nil]
        defer { cArgv.forEach { free($0) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, python, &actions, nil, &cArgv, environ)
        close(stdinPipe[0])
        close(stdoutPipe[1])
        guard code == 0 else {
            close(stdinPipe[1])
            close(stdoutPipe[0])
            throw Failure.notReady("cannot run \(python): \(String(cString: strerror(code)))")
        }
        // The ready line is read on a thread of its own: a blocking read holds no thread of
        // the tasks' pool.
        let output = stdoutPipe[0]
        let line: String = await withCheckedContinuation { continuation in
            let reader = Thread {
                var bytes: [UInt8] = []
                var byte: UInt8 = 0
                while read(output, &byte, 1) == 1, byte != UInt8(ascii: "\n") { bytes.append(byte) }
                close(output)
                continuation.resume(returning: String(decoding: bytes, as: UTF8.self))
            }
            reader.start()
        }
        let server = AuthServer(ready: line, pid: pid, input: stdinPipe[1])
        guard server.value("port") != nil else {
            server.stop()
            let log = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw Failure.notReady(String(log.suffix(2000)))
        }
        try? FileManager.default.removeItem(atPath: errors)
        return server
    }

    /// Closes its stdin and waits for it to exit (SIGKILL after 5 s).
    package func stop() {
        close(input)
        var status: Int32 = 0
        for _ in 0..<500 {
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
    }

    /// The JSON of `GET /stats`, as text.
    package func stats() async throws -> String {
        try await get(base + "/stats")
    }

    /// A number in `/stats`: `count("token_requests", "refresh_token")`.
    package func count(_ path: String...) async throws -> Int {
        var value: Any? = try JSONSerialization.jsonObject(with: Data(try await stats().utf8))
        for key in path { value = (value as? [String: Any])?[key] }
        return (value as? NSNumber)?.intValue ?? 0
    }

    /// POSTs nothing to `path` of the server (its `/control/…` endpoints).
    package func post(_ path: String) async throws {
        _ = try await get(base + path, method: "POST")
    }

    private func get(_ url: String, method: String = "GET") async throws -> String {
        var request = HTTPClientRequest(url: url)
        request.method = HTTPMethod(rawValue: method)
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        return String(buffer: try await response.body.collect(upTo: 1 << 20))
    }
}
