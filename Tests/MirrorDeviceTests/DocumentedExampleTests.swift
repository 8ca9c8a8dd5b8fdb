import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking  // URLRequest on Linux
#endif
import MirrorDevice
import Testing

// The example of README.md ("On the device") and docs/devices.md ("In an app: `MirrorDevice`"), as it is written there.

/// Brings the app's replica up to date, then answers a request for a page from it.
func showEvents(caches: URL) async throws -> Data? {
    let replica = try Replica(folder: caches.appendingPathComponent("events"))
    for try await event in replica.syncing(from: URL(string: "https://cdn.example.com/events/")!) {
        if case let .progress(progress) = event {
            print("\(progress.bytesDone) of \(progress.bytesTotal) bytes")
        }
    }
    let request = URLRequest(url: URL(string: "https://api.example.com/events?page=2")!)
    guard let answer = try replica.response(for: request) else { return nil }
    print(answer.status, answer.header("X-Mirror-Replica") ?? "")
    return answer.body
}

@Suite("the documented example", .timeLimit(.minutes(6)))
struct DocumentedExampleTests {
    @Test("README.md and docs/devices.md show the very code compiled here", arguments: [
        ("README.md", "## On the device"), ("docs/devices.md", "### In an app: `MirrorDevice`"),
    ])
    func same(file: String, chapter heading: String) throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let docs = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
        let chapter = try #require(docs.range(of: heading + "\n"))
        let rest = docs[chapter.upperBound...]
        let start = try #require(rest.range(of: "```swift\n"))
        let end = try #require(rest[start.upperBound...].range(of: "```\n"))
        let example = String(rest[start.upperBound..<end.lowerBound])
        let source = try String(contentsOf: here, encoding: .utf8)
        let compiled = source.components(separatedBy: "as it is written there.\n\n")[1].components(separatedBy: "\n@Suite")[0]
        let imports = "import Foundation\n#if canImport(FoundationNetworking)\nimport FoundationNetworking  // URLRequest on Linux\n#endif\nimport MirrorDevice\n\n"
        #expect(imports + compiled == example)
    }

    @Test("docs/devices.md shows the very code of the URL protocol's example compiled here")
    func sameProtocolExample() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let docs = try String(contentsOf: root.appendingPathComponent("docs/devices.md"), encoding: .utf8)
        let chapter = try #require(docs.range(of: "### The app's own requests: `ReplicaURLProtocol`"))
        let rest = docs[chapter.upperBound...]
        let start = try #require(rest.range(of: "```swift\n"))
        let end = try #require(rest[start.upperBound...].range(of: "```\n"))
        let example = String(rest[start.upperBound..<end.lowerBound])
        let source = try String(contentsOf: here.deletingLastPathComponent().appendingPathComponent("DocumentedProtocolExample.swift"),
                                encoding: .utf8)
        #expect(source.components(separatedBy: "as it is written there.\n\n")[1] == example)
    }
}
