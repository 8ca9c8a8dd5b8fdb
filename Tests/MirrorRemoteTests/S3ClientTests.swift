import Crypto
import Foundation
import InMemoryLogging
import Logging
@testable import MirrorHTTP
@testable import MirrorModel
@testable import MirrorRemote
import MirrorTestSupport
import Testing

private let quiet = Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() })

/// The environment that points at `server` with its key (or `secret` instead of its secret).
private func environment(_ server: AuthServer, secret: String? = nil) -> [String: String] {
    ["AWS_ACCESS_KEY_ID": server.value("access_key")!, "AWS_SECRET_ACCESS_KEY": secret ?? server.value("secret_key")!,
     "AWS_ENDPOINT_URL_S3": server.base, "AWS_REGION": "us-east-1"]
}

/// Runs `body` with a client of a new bucket `name` on a fresh moto server.
private func withBucket(_ name: String, configure: (inout S3Configuration) -> Void = { _ in },
                        _ body: (S3Client, AuthServer) async throws -> Void) async throws {
    try await AuthServer.withShared("s3_server.py") { server in
        var configuration = try S3Configuration(url: "s3://\(name)/state", environment: environment(server))
        configure(&configuration)
        let log = InMemoryLogHandler()
        let client = S3Client(configuration, logger: Logger(label: "t", factory: { _ in log }),
                              policy: RetryPolicy(baseDelay: 0.01))
        _ = try await client.exchange("PUT", key: nil)
        try await body(client, server)
        // Nothing was retried: every answer was the first.
        #expect(log.entries.map(\.message.description) == [])
    }
}

/// `"<hex MD5>"`: the ETag S3 gives an object written in one PUT.
private func md5ETag(_ bytes: [UInt8]) -> String {
    "\"" + Insecure.MD5.hash(data: bytes).map { String(format: "%02x", $0) }.joined() + "\""
}

/// Bytes 0-255 over and over, shifted by `seed`.
private func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8 &+ seed) }
}

/// S3 in moto's server mode with signature checking on: its IAM user's key signs every
/// request, as `scripts/auth-servers/s3_server.py` sets it up.
@Suite("S3 against a real server", .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"),
       .timeLimit(.minutes(6)))
struct S3ClientTests {
    @Test("put, get, head and delete round-trip exact bytes and ETags, under a key that needs encoding")
    func roundTrip() async throws {
        try await withBucket("round-trip") { client, _ in
            let key = client.configuration.key("a b+c/ü&=?.bin")
            #expect(key == "state/a b+c/ü&=?.bin")
            let body = pattern(70_000)
            let etag = try await client.put(key, body)
            #expect(etag == md5ETag(body))
            #expect(try await client.get(key) == S3Client.Object(body: body, etag: etag))
            #expect(try await client.head(key) == S3Client.Metadata(etag: etag, size: 70_000))

            let empty = try await client.put("state/empty", [])
            #expect(empty == "\"d41d8cd98f00b204e9800998ecf8427e\"")
            #expect(try await client.get("state/empty") == S3Client.Object(body: [], etag: empty))

            try await client.delete(key)
            #expect(try await client.get(key) == nil)
            #expect(try await client.head(key) == nil)
            try await client.delete(key)
        }
    }

    @Test("If-None-Match: * creates a key once; If-Match replaces only the current ETag; losers get the typed error")
    func conditionalWrites() async throws {
        try await withBucket("leases") { client, _ in
            let first = try await client.put("state/lease", Array("one".utf8), condition: .ifNoneMatch)
            #expect(first == md5ETag(Array("one".utf8)))
            let taken = await #expect(throws: S3Error.self) {
                try await client.put("state/lease", Array("two".utf8), condition: .ifNoneMatch)
            }
            #expect(taken?.kind == .preconditionFailed)
            #expect(taken?.status == 412)
            #expect(taken?.retries == 0)
            #expect(taken?.description
                == "PUT s3://leases/state/lease: HTTP 412 PreconditionFailed: At least one of the pre-conditions you specified did not hold")

            let second = try await client.put("state/lease", Array("two".utf8), condition: .ifMatch(first))
            #expect(second == md5ETag(Array("two".utf8)))
            let stale = await #expect(throws: S3Error.self) {
                try await client.put("state/lease", Array("three".utf8), condition: .ifMatch(first))
            }
            #expect(stale?.kind == .preconditionFailed)
            #expect(try await client.get("state/lease") == S3Client.Object(body: Array("two".utf8), etag: second))
        }
    }

    @Test("DeleteObject with If-Match removes only the current ETag; a stale one is refused and the object kept")
    func conditionalDeletes() async throws {
        try await withBucket("conditional-deletes") { client, _ in
            let first = try await client.put("state/lease", Array("one".utf8))
            let second = try await client.put("state/lease", Array("two".utf8))
            let stale = await #expect(throws: S3Error.self) { try await client.delete("state/lease", ifMatch: first) }
            #expect(stale?.kind == .preconditionFailed)
            #expect(stale?.status == 412)
            #expect(try await client.get("state/lease") == S3Client.Object(body: Array("two".utf8), etag: second))
            try await client.delete("state/lease", ifMatch: second)
            #expect(try await client.get("state/lease") == nil)
            // Already gone: nothing to remove, no error.
            try await client.delete("state/lease", ifMatch: second)
        }
    }

    @Test("a listing walks every page exactly, in key order, decoding keys, and keeps to its prefix")
    func listing() async throws {
        try await withBucket("listing") { client, _ in
            let keys = (0..<23).map { String(format: "state/jobs/%02d&<x>.db", $0) }
            for (index, key) in keys.enumerated() {
                try await client.put(key, pattern(index))
            }
            try await client.put("state/other", [1])
            try await client.put("state/jobs", [2])

            let first = try await client.list(prefix: "state/jobs/", continuation: nil, pageSize: 10)
            #expect(first.objects.map(\.key) == Array(keys.prefix(10)))
            #expect(first.continuation != nil)
            #expect(first.objects[3].size == 3)
            #expect(first.objects[3].etag == md5ETag(pattern(3)))

            let all = try await client.list(prefix: "state/jobs/", pageSize: 10)
            #expect(all.map(\.key) == keys)
            #expect(all.map(\.size) == Array(0..<23))
            #expect(try await client.list(prefix: "state/jobs/", pageSize: 23).map(\.key) == keys)
            #expect(try await client.list(prefix: "state/").count == 25)
            #expect(try await client.list(prefix: "nothing/").isEmpty)
        }
    }

    @Test("a 12 MiB file goes up in three parts and reads back byte-identical; a small one in one PUT")
    func multipart() async throws {
        let folder = NSTemporaryDirectory() + "mirror-s3-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let bytes = pattern(12 << 20, seed: 7)
        try Data(bytes).write(to: URL(fileURLWithPath: folder + "/big.db"))
        try Data(bytes.prefix(1000)).write(to: URL(fileURLWithPath: folder + "/small.db"))

        try await withBucket("parts", configure: {
            $0.partSize = 5 << 20
            $0.multipartThreshold = 5 << 20
        }) { client, _ in
            let etag = try await client.upload("state/big.db", fileAt: folder + "/big.db")
            // S3's multipart ETag: the MD5 of the parts' MD5s, then the number of parts.
            let parts = [bytes[0..<(5 << 20)], bytes[(5 << 20)..<(10 << 20)], bytes[(10 << 20)...]]
            let digests = parts.flatMap { Array(Insecure.MD5.hash(data: Array($0))) }
            #expect(etag == String(md5ETag(digests).dropLast()) + "-3\"")
            let object = try #require(try await client.get("state/big.db", maxBytes: 16 << 20))
            #expect(object.body.count == 12 << 20)
            #expect(SHA256.hash(data: object.body) == SHA256.hash(data: bytes))
            #expect(object.etag == etag)
            #expect(try await client.head("state/big.db") == S3Client.Metadata(etag: etag, size: 12 << 20))

            #expect(try await client.upload("state/small.db", fileAt: folder + "/small.db") == md5ETag(Array(bytes.prefix(1000))))

            // A multipart upload whose condition fails at the end is aborted: no upload is left.
            let lost = await #expect(throws: S3Error.self) {
                try await client.upload("state/big.db", fileAt: folder + "/big.db", condition: .ifNoneMatch)
            }
            #expect(lost?.kind == .preconditionFailed)
            let uploads = try #require(try await client.exchange("GET", key: nil, query: [("uploads", "")]))
            #expect(S3XML(uploads.body).blocks("Upload").count == 0)
            #expect(try await client.get("state/big.db", maxBytes: 16 << 20)?.etag == etag)

            let missing = await #expect(throws: S3Error.self) {
                try await client.upload("state/none.db", fileAt: folder + "/none.db")
            }
            #expect(missing?.kind == .file)
            #expect(missing?.description == "PUT s3://parts/state/none.db: cannot read \(folder)/none.db: No such file or directory")
        }
    }

    @Test("a wrong secret key is refused as SignatureDoesNotMatch, not retried, and no key shows in the error")
    func wrongSecret() async throws {
        try await AuthServer.withShared("s3_server.py") { server in
            let wrong = "wrong/secret+key0123456789abcdefghijklmn"
            let configuration = try S3Configuration(url: "s3://refused", environment: environment(server, secret: wrong))
            let client = S3Client(configuration, logger: quiet, policy: RetryPolicy(baseDelay: 0.01))
            let refused = await #expect(throws: S3Error.self) { try await client.put("lease", [1]) }
            #expect(refused?.kind == .refused)
            #expect(refused?.s3Code == "SignatureDoesNotMatch")
            #expect(refused?.retries == 0)
            #expect(refused?.description == "PUT s3://refused/lease: HTTP 403 SignatureDoesNotMatch: The request signature we "
                + "calculated does not match the signature you provided. Check your key and signing method.")
            let texts = [refused.map { "\($0)" } ?? "", refused.map { String(reflecting: $0) } ?? "",
                         "\(configuration)", String(reflecting: configuration), "\(configuration.credentials!)"]
            for text in texts {
                #expect(!text.contains(wrong))
                #expect(!text.contains(server.value("secret_key")!))
                #expect(!text.contains(server.value("access_key")!))
            }
        }
    }

    @Test("a request to STS follows no redirect to another origin: that origin is sent nothing")
    func webIdentityRedirect() async throws {
        let folder = NSTemporaryDirectory() + "mirror-s3-identity-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "eyJ.identity.token-Q7".write(toFile: folder + "/token", atomically: true, encoding: .utf8)
        for status in [302, 303, 307, 308] {
            try await FixtureServer.with({ _ in .text("<AssumeRoleWithWebIdentityResponse/>", status: 200) }) { other in
                try await FixtureServer.with({ _ in FixtureResponse(status: status, headers: [("Location", other.base + "/")], body: []) }) { sts in
                    let identity = ["AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/mirror", "AWS_WEB_IDENTITY_TOKEN_FILE": folder + "/token",
                                    "AWS_ENDPOINT_URL_STS": sts.base, "AWS_ENDPOINT_URL_S3": sts.base, "AWS_REGION": "us-east-1"]
                    let client = S3Client(try S3Configuration(url: "s3://identity/state", environment: identity), logger: quiet,
                                          policy: RetryPolicy(baseDelay: 0.01))
                    let refused = await #expect(throws: S3Error.self) { try await client.keys.signing() }
                    #expect(refused?.description == "AssumeRoleWithWebIdentity \(sts.base)/: HTTP \(status) redirect to \(other.base), another "
                        + "origin: not followed, since the request's credentials go to its own origin only (set the URL to the new origin "
                        + "if it is to be trusted)", "\(status)")
                    #expect(sts.requests.map(\.method) == ["POST"], "\(status)")
                    #expect(other.requests.map(\.target) == [], "\(status)")
                }
            }
        }
    }

    @Test("a web identity: STS's temporary keys and session token sign every request; an unreadable token file is an error naming it; the token shows nowhere")
    func webIdentity() async throws {
        let folder = NSTemporaryDirectory() + "mirror-s3-identity-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6bWlycm9yIn0.c2lnbmF0dXJl"
        try (token + "\n").write(toFile: folder + "/token", atomically: true, encoding: .utf8)
        try await AuthServer.withShared("s3_server.py") { server in
            let identity = ["AWS_ROLE_ARN": server.value("role_arn")!, "AWS_WEB_IDENTITY_TOKEN_FILE": folder + "/token",
                            "AWS_ROLE_SESSION_NAME": "pod-0", "AWS_ENDPOINT_URL": server.base, "AWS_REGION": "us-east-1"]
            let log = InMemoryLogHandler()
            let client = S3Client(try S3Configuration(url: "s3://identity/state", environment: identity),
                                  logger: Logger(label: "t", factory: { _ in log }), policy: RetryPolicy(baseDelay: 0.01))
            _ = try await client.exchange("PUT", key: nil)
            let etag = try await client.put("state/lease", Array("held".utf8), condition: .ifNoneMatch)
            #expect(try await client.get("state/lease") == S3Client.Object(body: Array("held".utf8), etag: etag))
            #expect(try await client.list(prefix: "state/").map(\.key) == ["state/lease"])
            let keys = try await client.keys.signing()
            guard case let .awsSigV4(sigv4) = keys.auth.kind else {
                Issue.record("not SigV4: \(keys.auth)")
                return
            }
            #expect(sigv4.accessKey.hasPrefix("ASIA"))
            #expect(sigv4.sessionToken?.isEmpty == false)

            // A refusal names the bucket and key; nothing of the token or the temporary keys shows.
            let refused = await #expect(throws: S3Error.self) { try await client.put("state/lease", [1], condition: .ifNoneMatch) }
            let gone = S3Client(try S3Configuration(url: "s3://identity/state", environment: identity.merging(
                ["AWS_WEB_IDENTITY_TOKEN_FILE": folder + "/missing"]) { $1 }), logger: quiet)
            let unreadable = await #expect(throws: S3Error.self) { try await gone.get("state/lease") }
            #expect(unreadable?.kind == .file)
            #expect(unreadable?.description == "AssumeRoleWithWebIdentity \(server.base)/: cannot read the web identity token "
                + "file '\(folder)/missing' (AWS_WEB_IDENTITY_TOKEN_FILE)")
            for text in log.entries.map({ "\($0.message) \($0.metadata)" }) + [refused.map { "\($0)" } ?? "",
                                                                               "\(keys.auth)", String(reflecting: keys.auth)] {
                #expect(!text.contains(token))
                #expect(!text.contains(sigv4.secretKey))
                #expect(!text.contains(sigv4.sessionToken ?? token))
            }
        }
    }
}

@Suite("S3 answers", .timeLimit(.minutes(6)))
struct S3AnswerTests {
    @Test("STS's expiry, its fraction of a second of any length")
    func expiry() {
        #expect(S3Keys.date("2026-11-27T11:28:55Z") == Date(timeIntervalSince1970: 1_795_778_935))
        #expect(abs((S3Keys.date("2026-11-27T11:28:55.279Z")?.timeIntervalSince1970 ?? 0) - 1_795_778_935.279) < 0.001)
        #expect(abs((S3Keys.date("2026-11-27T11:28:55.279365Z")?.timeIntervalSince1970 ?? 0) - 1_795_778_935.279365) < 0.001)
        #expect(S3Keys.date("tomorrow") == nil)
    }

    @Test("S3's XML: elements found by name, blocks in order, entities decoded")
    func xml() {
        let document = S3XML(Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><IsTruncated>true</IsTruncated>
            <Contents><Key>a&amp;b&lt;c&gt;&#233;&#x4E2D;</Key><ETag>&quot;x&quot;</ETag></Contents>
            <Contents><Key>second</Key></Contents><KeyCount>2</KeyCount><NextContinuationToken/></ListBucketResult>
            """.utf8))
        #expect(document.blocks("ListBucketResult").count == 1)
        #expect(document.blocks("Contents").map { $0.text("Key") } == ["a&b<c>é中", "second"])
        #expect(document.blocks("Contents").first?.text("ETag") == "\"x\"")
        #expect(document.text("KeyCount") == "2")
        #expect(document.text("IsTruncated") == "true")
        #expect(document.text("NextContinuationToken") == "")
        #expect(document.text("Missing") == nil)
        #expect("\"a\"&<b>'".markupEscaped == "&quot;a&quot;&amp;&lt;b&gt;&#39;")
    }

    @Test("parts are the size asked, at least 5 MiB, and few enough for 10,000 to hold the file")
    func partSizes() {
        #expect(S3Client.partSize(fileSize: 12 << 20, preferred: 8 << 20) == 8 << 20)
        #expect(S3Client.partSize(fileSize: 12 << 20, preferred: 1 << 20) == 5 << 20)
        #expect(S3Client.partSize(fileSize: 80_000 << 20, preferred: 8 << 20) == 8 << 20)
        #expect(S3Client.partSize(fileSize: 80_001 << 20, preferred: 8 << 20) == 9 << 20)
        #expect(S3Client.partSize(fileSize: 100 << 30, preferred: 8 << 20) == 11 << 20)
    }
}

@Suite("S3 retries", .timeLimit(.minutes(6)))
struct S3RetryTests {
    let keys = ["AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"]

    static func error(_ code: String, _ message: String) -> [UInt8] {
        Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>\(code)</Code><Message>\(message)</Message></Error>".utf8)
    }

    @Test("503 SlowDown is retried until it passes; a 403 is not retried; 500 through every retry is unavailable")
    func retries() async throws {
        let slow = SharedCounter()
        try await FixtureServer.with({ request in
            switch (request.method, request.path) {
            case ("PUT", "/bucket/slow"):
                if slow.value < 2 {
                    slow.increment()
                    return FixtureResponse(status: 503, body: Self.error("SlowDown", "Please reduce your request rate."))
                }
                return FixtureResponse(status: 200, headers: [("ETag", "\"abc\"")], body: [])
            case ("GET", "/bucket/denied"):
                return FixtureResponse(status: 403, body: Self.error("AccessDenied", "Access Denied"))
            default:
                return FixtureResponse(status: 500, body: Self.error("InternalError", "We encountered an internal error."))
            }
        }) { server in
            var configuration = try S3Configuration(url: "s3://bucket", environment: keys.merging(
                ["AWS_ENDPOINT_URL_S3": server.base, "AWS_SESSION_TOKEN": "session-token-0123456789"]) { $1 })
            configuration.retries = 2
            let log = InMemoryLogHandler()
            let client = S3Client(configuration, logger: Logger(label: "t", factory: { _ in log }),
                                  policy: RetryPolicy(baseDelay: 0.001))

            #expect(try await client.put("slow", Array("body".utf8)) == "\"abc\"")
            let puts = server.requests.filter { $0.path == "/bucket/slow" }
            #expect(puts.count == 3)
            for put in puts {
                #expect(put.headers["authorization"]?.hasPrefix("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") == true)
                #expect(put.headers["x-amz-content-sha256"] == SHA256.hash(data: Array("body".utf8)).map { String(format: "%02x", $0) }.joined())
                #expect(put.headers["x-amz-security-token"] == "session-token-0123456789")
                #expect(put.body == Array("body".utf8))
            }
            #expect(log.entries.map { "\($0.message) \($0.metadata["http.status"] ?? "")" } == ["retrying 503", "retrying 503"])

            let denied = await #expect(throws: S3Error.self) { try await client.get("denied") }
            #expect(denied?.kind == .refused)
            #expect(denied?.description == "GET s3://bucket/denied: HTTP 403 AccessDenied: Access Denied")
            #expect(server.requests.filter { $0.path == "/bucket/denied" }.count == 1)

            let failing = await #expect(throws: S3Error.self) { try await client.delete("broken") }
            #expect(failing?.kind == .unavailable)
            #expect(failing?.description
                == "DELETE s3://bucket/broken: HTTP 500 InternalError: We encountered an internal error. (after 2 retries)")
            #expect(server.requests.filter { $0.path == "/bucket/broken" }.count == 3)
            for text in log.entries.map({ "\($0.message) \($0.metadata)" }) + ["\(failing!)", "\(denied!)"] {
                #expect(!text.contains("wJalrXUtnFEMI"))
                #expect(!text.contains("session-token-0123456789"))
            }
        }
    }
}
