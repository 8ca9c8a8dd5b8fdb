import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import MirrorModel
@testable import MirrorRemote
import MirrorTestSupport
import Testing

@Suite("a replica synced from a bucket's public URLs", .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"),
       .timeLimit(.minutes(6)))
struct S3ReplicaTests {
    @Test("published to moto's S3, read anonymously under a policy letting everyone read the prefix: objects whole, pages answered; unchanged, one request and its 304; a half fetched object resumed with a 206")
    func fromBucket() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let api = try await walkedAPI(in: folder)
        // A server of its own, whose request log this test alone writes to.
        let log = folder + "/s3-requests.log"
        try await AuthServer.with("s3_server.py", ["--request-log", log]) { s3 in
            let environment = ["AWS_ACCESS_KEY_ID": s3.value("access_key")!, "AWS_SECRET_ACCESS_KEY": s3.value("secret_key")!,
                               "AWS_ENDPOINT_URL_S3": s3.base, "AWS_REGION": "us-east-1"]
            let client = S3Client(try S3Configuration(url: "s3://public-replica", environment: environment),
                                  logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
            _ = try await client.exchange("PUT", key: nil)
            let policy = #"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","#
                + #""Resource":"arn:aws:s3:::public-replica/events/*"}]}"#
            _ = try await client.exchange("PUT", key: nil, query: [("policy", "")], body: Array(policy.utf8))

            let published = try await mirror(["publish", "s3://public-replica/events", "--output", "out"], in: folder,
                                             environment: environment)
            #expect(published.status == 0, "\(published.stderr)")
            let manifest = try PublishManifest.decoded(try #require(try await client.get("events/manifest.json")).body)
            var objects: [PublishedObject] = []
            for object in manifest.entries.first?.objects ?? [] {
                let bytes = try #require(try await client.get(object.key)).body
                objects.append(PublishedObject(path: try #require(object.path), bytes: Data(bytes)))
            }
            #expect(objects.count == 2)
            try await expectSyncs(from: URL(string: s3.base + "/public-replica/events/")!, target: "/public-replica/events/",
                                  objects: objects, api: api, in: folder) {
                ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            }
            // Outside the prefix the policy names, an unsigned read is refused.
            _ = try await client.put("private.txt", Array("not for everyone".utf8))
            let refused = try await URLSession.shared.data(from: URL(string: s3.base + "/public-replica/private.txt")!)
            #expect((refused.1 as? HTTPURLResponse)?.statusCode == 403)
        }
    }
}
