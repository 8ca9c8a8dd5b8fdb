import Foundation
import Logging
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorJobFile
@testable import MirrorModel
import MirrorTestSupport
import Testing

/// Runs `yaml` (its words in `replacing` replaced first) with `environment`.
private func run(_ harness: Harness, _ yaml: String, replacing: [String: String], environment: [String: String],
                 parallel: Int = 1) async throws -> RunSummary {
    var text = yaml
    for (word, value) in replacing { text = text.replacingOccurrences(of: word, with: value) }
    let file = try harness.load(text, environment: environment)
    var options = Runner.Options()
    options.output = harness.output
    options.retry = RetryPolicy(baseDelay: 0.01)
    options.parallel = parallel
    return try await Runner(client: HTTPClient(), logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
        .run([file], options: options)
}

/// Makes an RS256 and an ES256 key pair with openssl in `folder`: rsa.pem, rsa.pub, ec.pem, ec.pub.
private func makeKeys(in folder: String) throws {
    for command in [
        ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "\(folder)/rsa.pem"],
        ["pkey", "-in", "\(folder)/rsa.pem", "-pubout", "-out", "\(folder)/rsa.pub"],
        ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "\(folder)/ec.pem"],
        ["pkey", "-in", "\(folder)/ec.pem", "-pubout", "-out", "\(folder)/ec.pub"],
    ] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = command
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "openssl \(command.joined(separator: " "))")
    }
}

/// Authentication against real servers: django-oauth-toolkit for OAuth 2 (client
/// credentials, refresh tokens with rotation), PyJWT behind an RFC 7523 endpoint and a
/// GitHub App's installation-token endpoint, and botocore's SigV4 signer as verifier.
@Suite("auth against real servers", .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"),
       .timeLimit(.minutes(6)))
struct AuthServerTests {
    @Test("client credentials against django-oauth-toolkit, in the form and by HTTP Basic; a token expired mid-walk at concurrency 8 is fetched once more")
    func clientCredentials() async throws {
        for clientAuth in ["client_secret_post", "client_secret_basic"] {
            try await AuthServer.with("oauth_server.py", ["--pages", "40", "--expire-at-page", "12"]) { server in
                let harness = try Harness()
                let yaml = """
                    version: 1
                    auth:
                      dot:
                        type: oauth2
                        token_url: TOKEN_URL
                        client_id: mirror-cc-client
                        client_secret: "${SECRET}"
                        client_auth: \(clientAuth)
                        scope: read
                    jobs:
                      - { name: items, url: "BASE/api/items?page={page}", records: data, id: id, table: t_item, auth: dot,
                          concurrency: 8, retries: 0 }
                    """
                let summary = try await run(harness, yaml, replacing: ["TOKEN_URL": server.value("token_url")!, "BASE": server.base],
                                            environment: ["SECRET": "mirror-cc-secret"])
                #expect(summary.jobs.map(\.error) == [nil], "\(clientAuth)")
                #expect(try harness.ids().count == 400)
                let stats = try await server.stats()
                #expect(try await server.count("token_requests", "client_credentials") == 2, "\(stats)")
                #expect(try await server.count("api_requests", "401") >= 1)
                #expect(summary.jobs.first?.retries == 0)
            }
        }
    }

    @Test("a rotated refresh token from django-oauth-toolkit: exactly one refresh mid-walk at concurrency 8, kept in the token store, and the next run starts from it")
    func refreshRotation() async throws {
        try await AuthServer.with("oauth_server.py", ["--pages", "40", "--expire-at-page", "12"]) { server in
            let harness = try Harness()
            let yaml = """
                version: 1
                auth:
                  dot:
                    type: oauth2
                    grant: refresh_token
                    token_url: TOKEN_URL
                    client_id: mirror-refresh-client
                    client_secret: "${SECRET}"
                    refresh_token: "${REFRESH}"
                    token_store: state/dot.json
                jobs:
                  - { name: items, url: "BASE/api/items?page={page}", records: data, id: id, table: t_item, auth: dot,
                      concurrency: 8, retries: 0 }
                """
            let replacing = ["TOKEN_URL": server.value("token_url")!, "BASE": server.base]
            let environment = ["SECRET": "mirror-refresh-secret", "REFRESH": server.value("refresh", "refresh_token")!]
            let first = try await run(harness, yaml, replacing: replacing, environment: environment)
            #expect(first.jobs.map(\.error) == [nil])
            #expect(try harness.ids().count == 400)
            expectNoSecret(["mirror-refresh-secret", environment["REFRESH"]!], in: harness.writtenBytes([("summary", first.reported)]))
            // One token at the start, one refresh once page 12 expired it.
            let stats = try await server.stats()
            #expect(try await server.count("token_requests", "refresh_token") == 2, "\(stats)")
            let stored = try #require(try TokenStore(path: harness.folder + "/state/dot.json").read())
            #expect(stored.refreshToken != environment["REFRESH"])
            #expect(try await server.count("refresh_tokens", "active") == 1)

            // The configured token was rotated away long ago: only the stored one works.
            let second = try await run(harness, yaml, replacing: replacing, environment: environment)
            #expect(second.jobs.map(\.error) == [nil])
            #expect(try await server.count("token_requests", "refresh_token") == 3)
            #expect(try await server.count("token_responses", "refresh_token", "400") == 0)
        }
    }

    @Test("JWT assertions (RS256, ES256) exchanged at an RFC 7523 endpoint verified by PyJWT, and a GitHub App's JWT for an installation token")
    func jwt() async throws {
        let keys = try Harness()
        try makeKeys(in: keys.folder)
        try await AuthServer.with("oauth_server.py", ["--jwt-public-key", keys.folder + "/rsa.pub",
                                                      "--jwt-public-key", keys.folder + "/ec.pub"]) { server in
            for (algorithm, key) in [("RS256", "rsa.pem"), ("ES256", "ec.pem")] {
                let harness = try Harness()
                let yaml = """
                    version: 1
                    auth:
                      google:
                        type: jwt
                        algorithm: \(algorithm)
                        private_key_file: \(keys.folder)/\(key)
                        issuer: mirror-tests
                        subject: robot@example.iam
                        scope: read
                        token_url: JWT_URL
                      github:
                        type: jwt
                        algorithm: RS256
                        private_key: "${GITHUB_KEY}"
                        issuer: "12345"
                        lifetime: 9m
                        exchange: bearer
                        token_url: GITHUB_URL
                    jobs:
                      - { name: google, url: "BASE/api/items?page={page}", records: data, id: id, table: t_google, auth: google }
                      - { name: github, url: "BASE/api/items?page={page}", records: data, id: id, table: t_github, auth: github }
                    """
                let summary = try await run(harness, yaml, replacing: [
                    "JWT_URL": server.value("jwt", "token_url")!, "GITHUB_URL": server.value("github_app", "access_tokens_url")!,
                    "BASE": server.base,
                ], environment: ["GITHUB_KEY": try String(contentsOfFile: keys.folder + "/rsa.pem", encoding: .utf8)])
                #expect(summary.jobs.map(\.error) == [nil, nil], "\(algorithm)")
                #expect(try harness.ids("t_google").count == 50)
                #expect(try harness.ids("t_github").count == 50)
                // No byte of either private key's body, whole or a line of it.
                let pem = try String(contentsOfFile: keys.folder + "/" + key, encoding: .utf8)
                    + String(contentsOfFile: keys.folder + "/rsa.pem", encoding: .utf8)
                expectNoSecret(pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init),
                               in: harness.writtenBytes([("summary", summary.reported)]))
            }
            let stats = try await server.stats()
            #expect(try await server.count("token_responses", "urn:ietf:params:oauth:grant-type:jwt-bearer", "200") == 2,
                    "\(stats)")
            #expect(try await server.count("token_responses", "github_app_installation", "201") == 2)
        }
    }

    @Test("every request signed with SigV4 is verified by botocore's own signer: GET with a query, POST with a body, a session token")
    func sigv4() async throws {
        try await AuthServer.with("sigv4_server.py", ["--access-key", "AKIDMIRRORTEST", "--secret-key", "wJalr/K7MDENG+bPxRfi",
                                                      "--session-token", "IQoJb3JpZ2luX2Vj//tok=", "--region", "eu-west-1",
                                                      "--service", "execute-api"]) { server in
            let harness = try Harness()
            let yaml = """
                version: 1
                auth:
                  aws:
                    type: aws_sigv4
                    access_key: AKIDMIRRORTEST
                    secret_key: "${AWS_SECRET}"
                    session_token: "${AWS_TOKEN}"
                    region: eu-west-1
                    service: execute-api
                defaults: { records: data, id: id, auth: aws, retries: 0 }
                jobs:
                  - { name: get, url: "BASE/items?page={page}&q=a%20b%2Bc&z=1&a=%C3%A9", table: t_get }
                  - { name: post, url: "BASE/search", method: POST, body: { page: "{page}" }, table: t_post }
                """
            let summary = try await run(harness, yaml, replacing: ["BASE": server.base],
                                        environment: ["AWS_SECRET": "wJalr/K7MDENG+bPxRfi", "AWS_TOKEN": "IQoJb3JpZ2luX2Vj//tok="])
            let stats = try await server.stats()
            #expect(summary.jobs.map(\.error) == [nil, nil], "\(stats)")
            #expect(try harness.ids("t_get").count == 50)
            #expect(try harness.ids("t_post").count == 50)
            expectNoSecret(["wJalr/K7MDENG+bPxRfi", "IQoJb3JpZ2luX2Vj//tok="], in: harness.writtenBytes([("summary", summary.reported)]))
            #expect(try await server.count("rejected") == 0)
            #expect(try await server.count("verified") >= 12)
        }
    }
}
