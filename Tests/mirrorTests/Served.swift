import Foundation
@testable import MirrorHTTP
@testable import MirrorModel

/// How long, in seconds, a test waits for a server on 127.0.0.1 to answer one request. The
/// whole suite runs at once on two cores, next to the servers in Python: an answer a test
/// needs in milliseconds alone can take over ten seconds while the rest start, so this only
/// bounds a server that no longer answers, well inside the suites' time limits.
let answerTimeout: Double = 60

/// A `mirror serve` process of the test's folder, on a free port.
struct Served {
    let child: Child
    let port: String

    static func start(in folder: String, name: String, arguments: [String] = []) async throws -> Served {
        let child = try Child(mirrorBinary.path, ["serve", "jobs.yaml", "--port", "0"] + arguments, in: folder,
                              environment: ProcessInfo.processInfo.environment,
                              stdout: folder + "/\(name).out", stderr: folder + "/\(name).err")
        for _ in 0..<2000 {
            let said = (try? String(contentsOfFile: folder + "/\(name).err", encoding: .utf8)) ?? ""
            if let port = said.firstMatch(of: #/serving 'out' on http://127.0.0.1:([0-9]+)/_mirror/tables/#).map({ String($0.1) }) {
                return Served(child: child, port: port)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        kill(child.pid, SIGKILL)
        _ = await child.ending()
        throw CancellationError()
    }

    /// Status, ETag and body of `target`, sent with `If-None-Match` when given.
    func get(_ target: String, ifNoneMatch: String? = nil) async throws -> String {
        let headers = ifNoneMatch.map { [Header(name: "If-None-Match", value: RedactedText(real: $0, redactor: .none))] } ?? []
        let answer = try await HTTPClient().send(HTTPRequest(
            method: "GET", url: RedactedURL(real: "http://127.0.0.1:\(port)\(target)", redactor: .none),
            headers: headers, body: nil, timeout: answerTimeout, maxBytes: 1 << 20))
        let body = String(decoding: answer.body, as: UTF8.self)
            .replacingOccurrences(of: "127.0.0.1:\(port)", with: "SERVER")
        return "\(answer.status) \(answer.headers["etag"] ?? "-")\n\(body)"
    }

    func stop() async -> Child.Ending {
        kill(child.pid, SIGTERM)
        return await child.ending()
    }
}
