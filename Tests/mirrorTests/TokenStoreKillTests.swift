import Foundation
@testable import MirrorHTTP
import MirrorTestSupport
import Testing

@Suite("token store under kill -9", .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"),
       .timeLimit(.minutes(6)))
struct TokenStoreKillTests {
    /// django-oauth-toolkit rotates the refresh token on every refresh and hands out access
    /// tokens that live 1 s, so a run refreshes again and again; each run is killed at a
    /// random moment. The server lets a replayed refresh token have the pair it was already
    /// rotated to for a while (as providers do for a client whose answer was lost), so what a
    /// kill can break is only the client's keeping: the store must always hold a token of the
    /// chain, whole, and no refresh may ever be refused.
    @Test("a rotated refresh token survives kill -9 at 20 random moments; the run after them succeeds")
    func killed() async throws {
        try await AuthServer.with("oauth_server.py", ["--pages", "40", "--access-token-seconds", "1",
                                                      "--refresh-grace-seconds", "3600"]) { server in
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
                    refresh_margin: 0s
                jobs:
                  - { name: items, url: "\(server.base)/api/items?page={page}", records: data, id: id, table: t_item, auth: dot,
                      concurrency: 1 }
                """
            try yaml.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let environment = ["SECRET": "mirror-refresh-secret", "REFRESH": server.value("refresh", "refresh_token")!]
            let store = TokenStore(path: folder + "/state/dot.json")
            var killed = 0
            for _ in 0..<20 {
                let ran = try await mirror(["run", "jobs.yaml", "--quiet", "--refresh"], in: folder, environment: environment,
                                           killAfter: .milliseconds(Int.random(in: 50...1500)))
                if ran.status == 128 + SIGKILL { killed += 1 } else { #expect(ran.status == 0, "\(ran.stderr)") }
                // Whatever the moment, the store is absent (no rotation yet) or holds a whole token.
                if FileManager.default.fileExists(atPath: store.path) {
                    let saved = try #require(try store.read())
                    #expect(saved.refreshToken.count >= 20)
                }
            }
            #expect(killed >= 5, "too few runs were killed to mean anything: \(killed)")
            let last = try await mirror(["run", "jobs.yaml", "--refresh"], in: folder, environment: environment)
            #expect(last.status == 0, "\(last.stderr)")
            #expect(last.stdout.contains("items: ok"), "\(last.stdout)")
            #expect(try await server.count("token_requests", "refresh_token") >= 20)
            let stats = try await server.stats()
            #expect(try await server.count("token_responses", "refresh_token", "400") == 0, "\(stats)")
        }
    }
}
