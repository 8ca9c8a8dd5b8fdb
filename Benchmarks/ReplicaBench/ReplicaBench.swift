// The device library measured by scripts/bench/bench-device.sh, through its public API only:
//
//   replica-bench sync SOURCE DIR         syncs the replica DIR from SOURCE (a URL or a folder)
//                                         once; prints `seconds=S fetched=N kept=K changed=yes|no`
//   replica-bench answers DIR URLS-FILE   one `response(for:)` per URL of the file (one a line),
//                                         after one warm-up pass over them all; prints
//                                         `answers=N p50_ms=… p99_ms=… max_ms=…`
//
// Every answer must be a 200 with a body: anything else is named on stderr, exit 1.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MirrorDevice

@main
struct ReplicaBench {
    static func main() async {
        let arguments = CommandLine.arguments
        do {
            switch (arguments.count, arguments.count > 1 ? arguments[1] : "") {
            case (4, "sync"): try await sync(from: arguments[2], into: arguments[3])
            case (4, "answers"): try answers(in: arguments[2], urls: arguments[3])
            default:
                FileHandle.standardError.write(Data("usage: replica-bench sync SOURCE DIR | replica-bench answers DIR URLS-FILE\n".utf8))
                exit(2)
            }
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            exit(1)
        }
    }

    static func sync(from source: String, into folder: String) async throws {
        let url = source.contains("://") ? URL(string: source)! : URL(fileURLWithPath: source)
        let replica = try Replica(folder: URL(fileURLWithPath: folder))
        let clock = ContinuousClock()
        let started = clock.now
        let outcome = try await replica.sync(from: url)
        let took = started.duration(to: clock.now)
        print(String(format: "seconds=%.4f fetched=%d kept=%d changed=%@", seconds(took), outcome.fetchedObjects,
                     outcome.keptObjects, outcome.changed ? "yes" : "no"))
    }

    struct WrongAnswer: Error, CustomStringConvertible {
        let description: String
    }

    static func answers(in folder: String, urls file: String) throws {
        let urls = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map { line in
            guard let url = URL(string: String(line)) else { throw WrongAnswer(description: "\(file): '\(line)' is not a URL") }
            return url
        }
        guard !urls.isEmpty else { throw WrongAnswer(description: "\(file) names no URL") }
        let replica = try Replica(folder: URL(fileURLWithPath: folder))
        let clock = ContinuousClock()
        var took: [Double] = []
        took.reserveCapacity(urls.count)
        for pass in 0..<2 {
            for url in urls {
                let started = clock.now
                let answer = try replica.response(for: URLRequest(url: url))
                let elapsed = started.duration(to: clock.now)
                guard let answer, answer.status == 200, !answer.body.isEmpty else {
                    throw WrongAnswer(description: "\(url): \(answer.map { "status \($0.status), \($0.body.count) bytes" } ?? "no page in the replica")")
                }
                if pass == 1 { took.append(seconds(elapsed) * 1000) }
            }
        }
        took.sort()
        // Nearest rank: the smallest value that p percent of the answers are at or below.
        func percentile(_ p: Int) -> Double { took[max(0, (took.count * p + 99) / 100 - 1)] }
        print(String(format: "answers=%d p50_ms=%.3f p99_ms=%.3f max_ms=%.3f", took.count, percentile(50), percentile(99), took.last!))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
