import Crypto
import Foundation
import Logging
@testable import MirrorHTTP
@testable import MirrorModel
@testable import MirrorExport
@testable import MirrorRemote
import MirrorTestSupport
import Testing

/// Two events on page 1, none after.
private let eventsAPI: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
    guard request.parameter("page") == "1" else { return .json(#"{"list":[]}"#) }
    return .json(#"{"list":[{"id":1,"title":"Opening"},{"id":2,"title":"Concert"}]}"#)
}

private let eventsYAML = """
    version: 1
    jobs:
      - { name: events, url: "BASE/events?page={page}", records: list, id: id, table: t_event }
    """

/// `published s3://… shard 0/1: generation G, 2 objects, B bytes uploaded, R old generations removed, 0.12s`:
/// the generation and the bytes, when the line has that shape.
private func summary(_ line: String, removed: String) -> (generation: String, bytes: Int)? {
    let pattern = #"^published s3://e2e/devices shard 0/1: generation (\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}), 2 objects, "#
        + #"(\d+) bytes uploaded, "# + removed + #" removed, \d+\.\d\ds\n$"#
    guard let match = line.wholeMatch(of: try! Regex(pattern)), match.output.count == 3,
          let generation = match.output[1].substring, let bytes = match.output[2].substring.flatMap({ Int($0) }) else {
        return nil
    }
    return (String(generation), bytes)
}

@Suite("the mirror binary: publish", .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"),
       .timeLimit(.minutes(6)))
struct PublishBinaryTests {
    @Test("an empty shard publishes nothing, says so and exits 0; a whole mirror that holds no records is still an error")
    func emptyShard() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/empty", withIntermediateDirectories: true)
        try await AuthServer.withShared("s3_server.py") { s3 in
            let environment = ["AWS_ACCESS_KEY_ID": s3.value("access_key")!, "AWS_SECRET_ACCESS_KEY": s3.value("secret_key")!,
                               "AWS_ENDPOINT_URL_S3": s3.base, "AWS_REGION": "us-east-1"]
            let client = S3Client(try S3Configuration(url: "s3://e2e-empty/devices", environment: environment),
                                  logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
            _ = try await client.exchange("PUT", key: nil)

            let empty = try await mirror(["publish", "s3://e2e-empty/devices", "--shard", "0/4", "--output", "empty"], in: folder,
                                         environment: environment)
            #expect(empty.status == 0, "\(empty.stderr)")
            #expect(empty.stdout == "shard 0/4: 'empty' holds no databases (a shard with no jobs has none): "
                + "nothing published to s3://e2e-empty/devices\n")
            #expect(empty.stderr == "")
            // A pod of an Indexed Job whose run had no jobs, and so made no output folder.
            let pod = try await mirror(["publish", "s3://e2e-empty/devices", "--shards", "4", "--output", "never-made"], in: folder,
                                       environment: environment.merging(["JOB_COMPLETION_INDEX": "3"]) { $1 })
            #expect(pod.status == 0, "\(pod.stderr)")
            #expect(pod.stdout == "shard 3/4: 'never-made' holds no databases (a shard with no jobs has none): "
                + "nothing published to s3://e2e-empty/devices\n")
            #expect(try await client.list(prefix: "").isEmpty)
            #expect(!FileManager.default.fileExists(atPath: folder + "/never-made"))

            let whole = try await mirror(["publish", "s3://e2e-empty/devices", "--output", "empty"], in: folder,
                                         environment: environment)
            #expect(whole.status == 1)
            #expect(whole.stderr == "error: 'empty' holds no records yet: run `mirror run` first\n")
        }
    }

    @Test("mirror run, then mirror publish twice with --keep 1: one whole generation named; errors name bucket and status, never a key")
    func publish() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(eventsAPI) { server in
            try eventsYAML.replacingOccurrences(of: "BASE", with: server.base)
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let run = try await mirror(["run", "jobs.yaml", "--quiet"], in: folder)
            #expect(run.status == 0 && run.stderr == "")
        }
        try await AuthServer.withShared("s3_server.py") { s3 in
            let secret = s3.value("secret_key")!
            let access = s3.value("access_key")!
            let environment = ["AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret,
                               "AWS_ENDPOINT_URL_S3": s3.base, "AWS_REGION": "us-east-1"]
            let client = S3Client(try S3Configuration(url: "s3://e2e/devices", environment: environment),
                                  logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
            _ = try await client.exchange("PUT", key: nil)

            let first = try await mirror(["publish", "s3://e2e/devices", "--keep", "1"], in: folder, environment: environment)
            #expect(first.status == 0 && first.stderr == "")
            let one = try #require(summary(first.stdout, removed: "0 old generations"), "\(first.stdout)")
            let second = try await mirror(["publish", "s3://e2e/devices/", "--keep", "1"], in: folder, environment: environment)
            #expect(second.status == 0 && second.stderr == "")
            let two = try #require(summary(second.stdout, removed: "1 old generation"), "\(second.stdout)")
            #expect(one.generation < two.generation)

            let manifest = try PublishManifest.decoded(try #require(try await client.get("devices/manifest.json")).body)
            #expect(manifest.shards == 1)
            #expect(manifest.entries.map(\.generation) == [two.generation])
            let objects = try #require(manifest.entries.first?.objects)
            #expect(objects.map(\.key) == ["manifest.json", "t_event.sqlite"].map { "devices/generations/\(two.generation)/shard-0/\($0)" })
            #expect(objects.reduce(0) { $0 + $1.bytes } == two.bytes)
            for object in objects {
                let body = try #require(try await client.get(object.key)).body
                let copy = folder + "/downloaded"
                try Data(body).write(to: URL(fileURLWithPath: copy))
                #expect(try SnapshotWriter.digest(copy) == (object.bytes, object.sha256), "\(object.key)")
            }
            // The first generation is gone: --keep 1.
            #expect(try await client.list(prefix: "devices/").map(\.key) == objects.map(\.key) + ["devices/manifest.json"])

            let absent = try await mirror(["publish", "s3://absent/devices"], in: folder, environment: environment)
            #expect(absent.status == 1 && absent.stdout == "")
            #expect(absent.stderr.hasPrefix("error: GET s3://absent/: HTTP 404 NoSuchBucket"), "\(absent.stderr)")
            let refused = try await mirror(["publish", "s3://e2e/devices"], in: folder,
                                           environment: environment.merging(["AWS_SECRET_ACCESS_KEY": "wrong" + secret]) { $1 })
            #expect(refused.status == 1)
            #expect(refused.stderr.hasPrefix("error: GET s3://e2e/: HTTP 403 SignatureDoesNotMatch"), "\(refused.stderr)")
            for text in [absent.stderr, refused.stderr] {
                #expect(!text.contains(secret) && !text.contains(access))
            }
            let unset = try await mirror(["publish", "s3://e2e/devices"], in: folder,
                                         environment: environment.merging(["AWS_ACCESS_KEY_ID": ""]) { $1 })
            #expect(unset.status == 2 && unset.stderr == "error: AWS_ACCESS_KEY_ID is not set\n")
            let notS3 = try await mirror(["publish", "https://e2e/devices"], in: folder, environment: environment)
            #expect(notS3.status == 2)
            #expect(notS3.stderr == "error: 'https://e2e/devices' is not an S3 location such as s3://bucket/prefix\n")
            let noOutput = try await mirror(["publish", "s3://e2e/devices", "--output", "nowhere"], in: folder, environment: environment)
            #expect(noOutput.status == 1)
            #expect(noOutput.stderr == "error: no output folder 'nowhere': run `mirror run` first, or name the folder with --output\n")
            for arguments in [["--keep", "0"], ["--shard", "2/2"], ["--shard", "0/2", "--shards", "2"], ["--shards", "0"]] {
                let bad = try await mirror(["publish", "s3://e2e/devices"] + arguments, in: folder, environment: environment)
                #expect(bad.status == 2 && bad.stdout == "", "\(arguments)")
            }
            let keep = try await mirror(["publish", "s3://e2e/devices", "--keep", "0"], in: folder, environment: environment)
            #expect(keep.stderr.hasPrefix("Error: --keep must be at least 1, not 0\n"))
            let index = try await mirror(["publish", "s3://e2e/devices", "--shards", "2"], in: folder,
                                         environment: environment.merging(["JOB_COMPLETION_INDEX": "2"]) { $1 })
            #expect(index.status == 2 && index.stderr == "error: JOB_COMPLETION_INDEX must be a shard from 0 to 1 of --shards 2, not '2'\n")
            // Nothing of the failures reached the bucket, and no hidden folder is left.
            #expect(try await client.list(prefix: "devices/").map(\.key) == objects.map(\.key) + ["devices/manifest.json"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/cache").filter { $0.hasPrefix(".publish-") } == [])
        }
    }
}

/// The problems a device finds reading `root/manifest.json`: an object it names that is not
/// at `root/<path>` with the size and SHA-256 named.
private func problems(readingFolder root: String) throws -> [String] {
    let manifest = try PublishManifest.decoded(Array(try Data(contentsOf: URL(fileURLWithPath: root + "/manifest.json"))))
    var problems: [String] = []
    for object in manifest.entries.flatMap(\.objects) {
        guard let path = object.path, let bytes = FileManager.default.contents(atPath: root + "/" + path) else {
            problems.append("\(object.key) is missing")
            continue
        }
        if bytes.count != object.bytes || Hex.string(SHA256.hash(data: bytes)) != object.sha256 {
            problems.append("\(path) is not the object named")
        }
    }
    return problems
}

@Suite("the mirror binary: publish to a folder", .timeLimit(.minutes(6)))
struct FolderPublishBinaryTests {
    @Test("kill -9 in the middle of a publish to a folder leaves a manifest naming whole generations only; the next publish cleans up")
    func killed() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Some megabytes of records, so that a publish takes a while to copy.
        let padding = String(repeating: "x", count: 400)
        try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            let ids = page >= 1 && page <= 4 ? (0..<2000).map { page * 10000 + $0 } : []
            return .json(#"{"list":[\#(ids.map { #"{"id":\#($0),"p":"\#(padding)"}"# }.joined(separator: ","))]}"#)
        }) { server in
            try eventsYAML.replacingOccurrences(of: "BASE", with: server.base)
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            #expect(try await mirror(["run", "jobs.yaml", "--quiet", "--output", "out"], in: folder).status == 0)
        }
        let root = folder + "/pub/events"
        let first = try await mirror(["publish", "file://" + root, "--output", "out"], in: folder)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.hasPrefix("published file://\(root) shard 0/1: generation "))
        let named = try PublishManifest.decoded(Array(try Data(contentsOf: URL(fileURLWithPath: root + "/manifest.json"))))
        #expect(named.entries.count == 1)
        let old = try #require(named.entries.first?.generation)

        // Killed once the new generation's folder is there: in the middle of its upload, or later.
        let victim = try Child(mirrorBinary.path, ["publish", "file://" + root, "--output", "out"], in: folder, environment: [:])
        while (try? FileManager.default.contentsOfDirectory(atPath: root + "/generations"))?.count ?? 0 < 2 {
            try await Task.sleep(for: .milliseconds(1))
        }
        kill(victim.pid, SIGKILL)
        _ = await victim.ending()
        let after = try PublishManifest.decoded(Array(try Data(contentsOf: URL(fileURLWithPath: root + "/manifest.json"))))
        #expect(after.entries.count == 1)
        #expect(try problems(readingFolder: root) == [])
        let generations = try FileManager.default.contentsOfDirectory(atPath: root + "/generations").sorted()
        #expect(generations.count == 2 && generations.contains(old))

        let again = try await mirror(["publish", "file://" + root, "--output", "out", "--keep", "1"], in: folder)
        #expect(again.status == 0, "\(again.stderr)")
        let last = try PublishManifest.decoded(Array(try Data(contentsOf: URL(fileURLWithPath: root + "/manifest.json"))))
        let newest = try #require(last.entries.first?.generation)
        #expect(last.entries.count == 1 && !generations.contains(newest))
        #expect(try problems(readingFolder: root) == [])
        // Of the older generations, at most what a write cut off left, which a later publish sweeps.
        let files = (FileManager.default.enumerator(atPath: root + "/generations")?.compactMap { $0 as? String } ?? [])
            .filter { !($0 as NSString).lastPathComponent.hasPrefix(".writing-") && FileManager.default.contents(atPath: root + "/generations/" + $0) != nil }
        #expect(files.sorted() == [newest + "/shard-0/manifest.json", newest + "/shard-0/t_event.sqlite"])
    }
}
