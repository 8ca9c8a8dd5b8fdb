import Foundation
import MirrorModel
import Testing

@Suite("a snapshot's manifest", .timeLimit(.minutes(6)))
struct SnapshotManifestTests {
    private func decoded(_ text: String) throws -> SnapshotManifest {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(SnapshotManifest.self, from: Data(text.utf8))
    }

    @Test("a manifest written before databases said whether they hold pages reads as holding none; one that says reads as it says")
    func pages() throws {
        let database = #""path":"t_event.sqlite","bytes":53248,"sha256":"82","changes_through":42,"feed":"3f","tables":[{"name":"t_event","records":42}]"#
        let older = try decoded(#"{"format":1,"mirror_version":"0.1.0","created_at":"2026-11-24T06:57:38.345Z","databases":[{\#(database)}],"files":[]}"#)
        #expect(older.databases.map(\.pages) == [false])
        #expect(older.databases.first?.changesThrough == 42 && older.databases.first?.tables.first?.records == 42)
        let newer = try decoded(#"{"format":1,"mirror_version":"0.1.0","created_at":"2026-11-24T06:57:38.345Z","databases":[{\#(database),"pages":true}],"files":[]}"#)
        #expect(newer.databases.map(\.pages) == [true])
    }
}
