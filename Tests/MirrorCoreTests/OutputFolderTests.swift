import Crypto
import Foundation
import GRDB
@testable import MirrorCore
import MirrorTestSupport
import Synchronization
import Testing

/// The bytes the fixture serves for a file at `path`.
private func content(_ path: String) -> [UInt8] {
    Array(String(repeating: "\(path);", count: 20).utf8)
}

/// The bucket folder a URL's file lands in (`files/ab`), computed independently of the code under test.
private func bucket(_ url: String) -> String {
    "files/" + Crypto.SHA256.hash(data: Array(url.utf8)).prefix(1).map { String(format: "%02x", $0) }.joined()
}

/// Page 1 holds one record per file name `files` gives for the server's address, its
/// `cover.url` on the server (`/f/<name>`); page 2 is empty. `/f/…` serves `content(path)`,
/// after `onFile` has seen the request.
private func api(files: @escaping @Sendable (_ base: String) -> [String],
                 onFile: @escaping @Sendable (FixtureRequest) -> Void = { _ in })
    -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        if request.path.hasPrefix("/f/") {
            onFile(request)
            return FixtureResponse(body: content(request.path))
        }
        let records = files(request.base).enumerated().map { #"{"id":\#($0.offset + 1),"cover":{"url":"BASE/f/\#($0.element)"}}"# }
        return .json(PagedAPI(records: [records]).body(page: Int(request.parameter("page") ?? "") ?? 0)
            .replacingOccurrences(of: "BASE", with: request.base))
    }
}

private func api(files: [String]) -> @Sendable (FixtureRequest) async -> FixtureResponse {
    api(files: { _ in files })
}

/// Three file names whose URLs on `base` land in three different bucket folders.
private func threeBuckets(_ base: String) -> [String] {
    var names: [String] = []
    var buckets: Set<String> = []
    for (index, stem) in ["early", "late", "other"].enumerated() {
        var number = index
        while !buckets.insert(bucket("\(base)/f/\(stem)\(number).jpg")).inserted { number += 3 }
        names.append("\(stem)\(number).jpg")
    }
    return names
}

private let downloadsJob = itemsJob("downloads: [cover.url]\nretries: 0")

/// Every `_mirror_files` row as `url status path http_status error`, by url.
private func fileRows(_ harness: Harness) throws -> [String] {
    try harness.database("t_item.sqlite").read { db in
        try Row.fetchAll(db, sql: "SELECT * FROM _mirror_files ORDER BY url").map { row in
            let path: String? = row["path"]
            let status: Int? = row["http_status"]
            let error: String? = row["error"]
            return "\(row["url"] as String) \(row["status"] as String) \(path ?? "-") \(status.map(String.init) ?? "-") \(error ?? "-")"
        }
    }
}

/// What is in `folder`, sorted: names only, folders and links included.
private func names(_ folder: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
}

private func makeFolder(_ path: String) throws {
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
}

private func link(_ path: String, to destination: String) throws {
    try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: destination)
}

private func bytes(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { Array($0) }
}

private let notFollowed = "is a symbolic link; mirror does not follow links in its output folder"

@Suite("the output folder is mirror's alone")
struct OutputFolderTests {
    @Test("the sweep of files/.partial removes only the temporary files mirror names, never what a link points to")
    func sweepKeepsWhatIsNotMirrors() async throws {
        let harness = try Harness()
        let partial = harness.output + "/files/.partial"
        let outside = harness.folder + "/outside.txt"
        try makeFolder(partial)
        try makeFolder(partial + "/789-3")
        try Data("secret\n".utf8).write(to: URL(fileURLWithPath: outside))
        for name in ["123-1", "keep.txt", "123-1.jpg", "-1", "12-"] {
            try Data(name.utf8).write(to: URL(fileURLWithPath: partial + "/" + name))
        }
        try link(partial + "/456-2", to: outside)
        _ = try await FixtureServer.with(api(files: [])) { server in
            try await harness.run(itemsJob(), server: server)
        }
        #expect(try names(partial) == ["-1", "12-", "123-1.jpg", "456-2", "789-3", "keep.txt"])
        #expect(bytes(partial + "/keep.txt") == Array("keep.txt".utf8))
        #expect(bytes(outside) == Array("secret\n".utf8))
    }

    @Test("a lock file that is a link is refused, never followed: what it points to keeps every byte, nothing is fetched")
    func lockFileLink() async throws {
        let harness = try Harness()
        let outside = harness.folder + "/outside.txt"
        let precious = Array("precious\ncontent\n".utf8)
        try Data(precious).write(to: URL(fileURLWithPath: outside))
        try makeFolder(harness.output)
        try link(harness.output + "/.mirror.lock", to: outside)
        // A link to nothing is refused too, rather than made into a file where it points.
        let other = try Harness()
        let nowhere = other.folder + "/nowhere"
        try makeFolder(other.output)
        try link(other.output + "/.mirror.lock", to: nowhere)
        let message = "'.mirror.lock' \(notFollowed)"
        try await FixtureServer.with(api(files: [])) { server in
            for harness in [harness, other] {
                await #expect {
                    try await harness.run(itemsJob(), server: server)
                } throws: { error in
                    (error as? LockFileError)?.description == "cannot lock the output folder '\(harness.output)': \(message)"
                }
            }
            #expect(server.requests.isEmpty)
        }
        #expect(bytes(outside) == precious)
        #expect(!FileManager.default.fileExists(atPath: nowhere))
        #expect(try names(harness.output) == [".mirror.lock"])
        #expect(try names(other.output) == [".mirror.lock"])
    }
}
