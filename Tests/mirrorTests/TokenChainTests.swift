import Foundation
@testable import MirrorHTTP
import MirrorTestSupport
import Testing

@Suite("a rotated refresh token chain across runs", .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"),
       .timeLimit(.minutes(6)))
struct TokenChainTests {
    /// django-oauth-toolkit with strict rotation (no grace: a used refresh token is dead at
    /// once), access tokens of 1 s, and a token endpoint that answers 300 ms after it has
    /// rotated: a run refreshes again and again, and the walk often ends with a refresh in
    /// flight, asked for by a request past the last page. Its answer must still be stored.
    @Test("five clean runs in a row against a strict token endpoint slow to answer: each succeeds, and the store holds the server's latest refresh token")
    func slowRotation() async throws {
        try await AuthServer.with("oauth_server.py", ["--pages", "40", "--access-token-seconds", "1",
                                                      "--rotation-answer-delay", "0.3"]) { server in
            let folder = try temporaryFolder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let yaml = """
                version: 1
                auth:
                  dot:
                    type: oauth2
                    grant: refresh_token
                    token_url: \(server.value("token_url")!)
                    client_id: mirror-refresh-client
                    client_secret: "${SECRET}"
                    refresh_token: "${REFRESH}"
                    token_store: state/dot.json
                jobs:
                  - { name: items, url: "\(server.base)/api/items?page={page}", records: data, id: id, table: t_item, auth: dot,
                      concurrency: 4, retries: 0 }
                """
            try yaml.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let environment = ["SECRET": "mirror-refresh-secret", "REFRESH": server.value("refresh", "refresh_token")!]
            let store = TokenStore(path: folder + "/state/dot.json")
            var held = 0
            for run in 1...5 {
                let ran = try await mirror(["run", "jobs.yaml", "--refresh"], in: folder, environment: environment)
                #expect(ran.status == 0, "run \(run): \(ran.stderr)")
                #expect(ran.stdout.hasPrefix("items: ok, 41 pages, 400 records"), "run \(run): \(ran.stdout)")
                let latest = try #require(try await latestRefreshToken(server))
                if try store.read()?.refreshToken == latest { held += 1 }
            }
            #expect(held == 5, "the store held the server's latest refresh token after \(held) of 5 runs")
            let stats = try await server.stats()
            #expect(try await server.count("token_responses", "refresh_token", "400") == 0, "\(stats)")
            #expect(try await server.count("refresh_tokens", "active") == 1, "\(stats)")
        }
    }

    private func latestRefreshToken(_ server: AuthServer) async throws -> String? {
        let stats = try JSONSerialization.jsonObject(with: Data(try await server.stats().utf8)) as? [String: Any]
        return (stats?["refresh_tokens"] as? [String: Any])?["latest"] as? String
    }
}
