import Crypto
import Foundation
import Logging
@testable import MirrorModel
@testable import MirrorRemote
import MirrorTestSupport
import Testing

/// A walk of 2 pages of 2 records, each pointing at an image: `x.png` and `w.png` hold the
/// same bytes, `y.png` and `z.png` their own.
private let images = ["x": "pixels of x", "y": "pixels of y", "z": "pixels of z", "w": "pixels of x"]

@Suite("state kept in S3 against a real server (--state s3://)",
       .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"), .timeLimit(.minutes(6)))
struct StateS3Tests {
    @Test("an empty folder pulls the shard's database; downloaded files go to files/ by content, once")
    func emptyFolders() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await AuthServer.withShared("s3_server.py") { s3 in
            let environment = ["AWS_ACCESS_KEY_ID": s3.value("access_key")!, "AWS_SECRET_ACCESS_KEY": s3.value("secret_key")!,
                               "AWS_ENDPOINT_URL_S3": s3.base, "AWS_REGION": "us-east-1"]
            let client = S3Client(try S3Configuration(url: "s3://state-files", environment: environment),
                                  logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
            _ = try await client.exchange("PUT", key: nil)
            try await FixtureServer.with({ request in
                if request.path.hasPrefix("/img/") {
                    let name = String(request.path.dropFirst("/img/".count).prefix { $0 != "." })
                    return FixtureResponse(headers: [("Content-Type", "image/png")], body: Array((images[name] ?? "").utf8))
                }
                let page = Int(request.parameter("page") ?? "") ?? 0
                let names = page == 1 ? ["x", "y"] : page == 2 ? ["z", "w"] : []
                let records = names.map { #"{"id":"\#($0)","img":"\#(request.base)/img/\#($0).png"}"# }
                return .json(#"{"list":[\#(records.joined(separator: ","))]}"#)
            }) { server in
                try """
                    version: 1
                    jobs:
                      - name: events
                        url: "\(server.base)/events?page={page}"
                        records: list
                        id: id
                        table: t_event
                        downloads: [img]
                    """.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
                let state = ["--state", "s3://state-files/state"]
                let first = try await mirror(["run", "jobs.yaml", "--output", "one"] + state, in: folder, environment: environment)
                #expect(first.status == 0, "\(first.stderr)")
                #expect(first.stdout.contains("state s3://state-files/state shard 0/1: pulled 0 databases and 0 files (0 bytes), "
                    + "pushed 1 database and 3 files ("))
                let keys = try await client.list(prefix: "state/").map(\.key)
                let files = keys.filter { $0.hasPrefix("state/files/") }
                #expect(files.count == 3)
                for key in files {
                    let body = try #require(try await client.get(key)).body
                    let sha = key.split(separator: "/").last!.prefix(64)
                    #expect(key.hasSuffix(".png"))
                    #expect(images.values.contains(String(decoding: body, as: UTF8.self)))
                    #expect(sha == Hex.string(SHA256.hash(data: body)))
                }
                #expect(keys.contains("state/shards/0-of-1/manifest.json"))
                #expect(keys.filter { $0.hasPrefix("state/databases/t_event.sqlite/") }.count == 1)
                #expect(!keys.contains("state/shards/0-of-1/lease.json"))

                // Another empty folder: the database and its files come from the store, so the walk
                // downloads no file from the API again, and none is pushed again.
                let asked = server.requests.count
                let second = try await mirror(["run", "jobs.yaml", "--output", "two"] + state, in: folder, environment: environment)
                #expect(second.status == 0, "\(second.stderr)")
                #expect(second.stdout.contains("state s3://state-files/state shard 0/1: pulled 1 database and 4 files ("))
                // It found every page as the first run left it: only times changed, so nothing is pushed.
                #expect(second.stdout.contains("pushed 0 databases and 0 files (0 bytes), generation 1"), "\(second.stdout)")
                #expect(server.requests.dropFirst(asked).filter { $0.path.hasPrefix("/img/") }.isEmpty)
                for name in images.keys.sorted() {
                    let path = try await sqlite(folder + "/two/t_event.sqlite", "SELECT path FROM _mirror_files WHERE url LIKE '%/\(name).png'")
                    let bytes = FileManager.default.contents(atPath: folder + "/two/" + path.trimmingCharacters(in: .whitespacesAndNewlines))
                    #expect(bytes.map { String(decoding: $0, as: UTF8.self) } == images[name])
                }
                #expect(try await sqlite(folder + "/two/t_event.sqlite", "SELECT count(*) FROM _mirror_runs") == "2\n")
                #expect(try await client.list(prefix: "state/files/").count == 3)
                #expect(try await client.list(prefix: "state/databases/").count == 1)
            }
        }
    }
}
