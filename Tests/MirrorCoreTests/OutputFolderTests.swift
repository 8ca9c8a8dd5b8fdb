import Crypto
import Foundation
import GRDB
@testable import MirrorCore
@testable import MirrorFiles
@testable import MirrorJobFile
@testable import MirrorModel
@testable import MirrorStore
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

@Suite("the output folder is mirror's alone", .timeLimit(.minutes(6)))
struct OutputFolderTests {
    @Test("a link at files/ is not followed: no file is requested or written through it, each fails saying why, the job succeeds")
    func filesFolderLink() async throws {
        let harness = try Harness()
        let outside = harness.folder + "/outside"
        try makeFolder(outside)
        try makeFolder(harness.output)
        try link(harness.output + "/files", to: outside)
        let (summary, base, requests) = try await FixtureServer.with(api(files: ["a.jpg", "b.png"])) { server in
            (try await harness.run(downloadsJob, server: server), server.base, server.requests.map(\.target))
        }
        let refusal = "'files' \(notFollowed)"
        let job = summary.jobs[0]
        #expect(job.succeeded)
        #expect(job.files.map { DownloadSummary(downloaded: $0.downloaded, bytes: $0.bytes, failed: $0.failed.sorted { $0.url < $1.url }) }
            == DownloadSummary(failed: [FileFailure(url: "\(base)/f/a.jpg", error: refusal),
                                        FileFailure(url: "\(base)/f/b.png", error: refusal)]))
        #expect(job.pages.total == 2 && job.records == .init(new: 2, updated: 0, unchanged: 0, rejected: 0, pruned: 0)
            && job.stopReason == "empty page 2")
        #expect(try fileRows(harness) == [
            "\(base)/f/a.jpg failed - - \(refusal)",
            "\(base)/f/b.png failed - - \(refusal)",
        ])
        #expect(requests.filter { !$0.hasPrefix("/items?") } == [])
        #expect(try names(outside) == [])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: harness.output + "/files") == outside)
    }

    @Test("a link at files/.partial is neither swept nor written through: what it points to stays whole")
    func partialFolderLink() async throws {
        let harness = try Harness()
        let outside = harness.folder + "/outside"
        try makeFolder(outside)
        try Data("keep me\n".utf8).write(to: URL(fileURLWithPath: outside + "/keep.txt"))
        try Data("not mirror's\n".utf8).write(to: URL(fileURLWithPath: outside + "/123-1"))
        try makeFolder(harness.output + "/files")
        try link(harness.output + "/files/.partial", to: outside)
        let (summary, base, requests) = try await FixtureServer.with(api(files: ["a.jpg"])) { server in
            (try await harness.run(downloadsJob, server: server), server.base, server.requests.map(\.target))
        }
        let refusal = "'files/.partial' \(notFollowed)"
        #expect(summary.jobs[0].succeeded)
        #expect(summary.jobs[0].files == DownloadSummary(failed: [FileFailure(url: "\(base)/f/a.jpg", error: refusal)]))
        #expect(try fileRows(harness) == ["\(base)/f/a.jpg failed - - \(refusal)"])
        #expect(requests.filter { !$0.hasPrefix("/items?") } == [])
        #expect(try names(outside) == ["123-1", "keep.txt"])
        #expect(bytes(outside + "/keep.txt") == Array("keep me\n".utf8))
        #expect(bytes(outside + "/123-1") == Array("not mirror's\n".utf8))
        // No bucket folder was made either.
        #expect(try names(harness.output + "/files") == [".partial"])
    }

    @Test("a bucket folder that is a link, or becomes one while its file downloads, is not written through")
    func bucketFolderLink() async throws {
        let harness = try Harness()
        let outside = harness.folder + "/outside"
        try makeFolder(outside)
        let output = harness.output
        // The first file's bucket is a link before the run; the second's becomes one while
        // the server answers it, after mirror made it; the third's is left alone.
        let swapped = Mutex(false)
        let handler = api(files: threeBuckets) { request in
            guard request.path == "/f/" + threeBuckets(request.base)[1] else { return }
            let folder = output + "/" + bucket(request.base + request.path)
            swapped.withLock { swapped in
                try? FileManager.default.removeItem(atPath: folder)
                try? FileManager.default.createSymbolicLink(atPath: folder, withDestinationPath: outside)
                swapped = true
            }
        }
        let (summary, base, requests) = try await FixtureServer.with(handler) { server in
            try makeFolder(output + "/files")
            try link(output + "/" + bucket("\(server.base)/f/\(threeBuckets(server.base)[0])"), to: outside)
            return (try await harness.run(downloadsJob, server: server), server.base, server.requests.map(\.target))
        }
        #expect(swapped.withLock { $0 })
        let urls = threeBuckets(base).map { "\(base)/f/\($0)" }
        let placed = bucket(urls[2]) + "/" + Crypto.SHA256.hash(data: Array(urls[2].utf8)).map { String(format: "%02x", $0) }.joined()
            + ".jpg"
        #expect(summary.jobs[0].succeeded)
        #expect(try fileRows(harness) == [
            "\(urls[0]) failed - - '\(bucket(urls[0]))' \(notFollowed)",
            "\(urls[1]) failed - 200 '\(bucket(urls[1]))' \(notFollowed)",
            "\(urls[2]) ok \(placed) 200 -",
        ])
        #expect(requests.filter { $0.hasPrefix("/f/") }.sorted() == urls.dropFirst().map { String($0.dropFirst(base.count)) })
        #expect(bytes(output + "/" + placed) == content("/f/" + threeBuckets(base)[2]))
        #expect(try names(outside) == [])
        #expect(try names(output + "/files/.partial") == [])
    }

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

    @Test("a lock file that is a hard link to a file outside is refused: that file keeps every byte")
    func lockFileHardLink() async throws {
        let harness = try Harness()
        let outside = harness.folder + "/outside.txt"
        let precious = Array("precious\ncontent\n".utf8)
        try Data(precious).write(to: URL(fileURLWithPath: outside))
        try makeFolder(harness.output)
        #expect(Foundation.link(outside, harness.output + "/.mirror.lock") == 0)
        try await FixtureServer.with(api(files: [])) { server in
            await #expect {
                try await harness.run(itemsJob(), server: server)
            } throws: { error in
                (error as? LockFileError)?.description == "cannot lock the output folder '\(harness.output)': "
                    + "'.mirror.lock' is a hard link or not a plain file; mirror does not write to files it did not make"
            }
            #expect(server.requests.isEmpty)
        }
        #expect(bytes(outside) == precious)
    }
}
