import Foundation
import MirrorTestSupport
import Testing

@Suite("mirror infer, the binary", .timeLimit(.minutes(6)))
struct InferBinaryTests {
    private let api: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
        request.parameter("page") == "1"
            ? .json(#"{"data":{"list":[{"id":"10","city":"Zürich"},{"id":12345678901234567890},{"id":"11","city":"Kraków"}]}}"#)
            : .json(#"{"data":{"list":[]}}"#)
    }

    @Test("infer prints the block on stdout and exits 0; a wrong --job exits 2, a missing folder 1")
    func infer() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(api) { server in
            try """
                version: 1
                output: out
                jobs:
                  - name: events
                    url: "\(server.base)/events?page={page}"
                    records: data.list
                    id: id
                    table: t_event
                """.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            #expect(try await mirror(["run", "jobs.yaml", "--quiet"], in: folder).status == 0)
        }
        let inferred = try await mirror(["infer", "jobs.yaml"], in: folder)
        #expect(inferred.status == 0)
        #expect(inferred.stderr == "")
        #expect(inferred.stdout == """
            # columns inferred from 3 records of job 'events' (table 't_event'); paths in order of first appearance
            columns:
              # id: string 2, integer 1; present in 100% of 3 records; 1 past 64 bits (the column keeps the digits, as text); the record's id (the job's 'id'): not proposed
              # city: string 2; present in 66.7% of 3 records
              city: {path: city, type: text}

            """)
        let misspelt = try await mirror(["infer", "jobs.yaml", "--job", "evnts"], in: folder)
        #expect(misspelt.status == 2)
        #expect(misspelt.stdout == "")
        #expect(misspelt.stderr == "error: no job named 'evnts' in jobs.yaml (did you mean 'events'?)\n")
        let nowhere = try await mirror(["infer", "jobs.yaml", "--output", "nowhere"], in: folder)
        #expect(nowhere.status == 1)
        #expect(nowhere.stderr == "error: job 'events': no output folder 'nowhere': run `mirror run` first, or name the folder with --output\n")
        let zero = try await mirror(["infer", "jobs.yaml", "--sample", "0"], in: folder)
        #expect(zero.status == 2)
        #expect(zero.stderr.contains("--sample must be at least 1, not 0"))
    }
}
