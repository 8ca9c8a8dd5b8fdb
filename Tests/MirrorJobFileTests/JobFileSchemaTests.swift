import Foundation
@testable import MirrorJobFile
@testable import MirrorModel
import Testing

@Suite("job-file schema", .timeLimit(.minutes(6)))
struct JobFileSchemaTests {
    private func schema() throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(JobFileSchema.text.utf8)) as? [String: Any])
    }

    private func properties(_ object: Any?) throws -> [String: Any] {
        try #require((object as? [String: Any])?["properties"] as? [String: Any])
    }

    @Test("lists exactly the keys the loader accepts, in every mapping")
    func keys() throws {
        let schema = try schema()
        #expect(schema["$schema"] as? String == "https://json-schema.org/draft/2020-12/schema")
        let defs = try #require(schema["$defs"] as? [String: Any])
        #expect(Set(try properties(schema).keys) == Set(FileKey.allCases.map(\.rawValue)))
        #expect(Set(try properties(defs["job"]).keys) == Set(JobKey.allCases.map(\.rawValue)))
        #expect(Set(try properties(defs["defaults"]).keys) == Set(JobKey.allCases.filter { !$0.isJobOnly }.map(\.rawValue)))
        #expect(Set(try properties(defs["pages"]).keys) == Set(PagesKey.allCases.map(\.rawValue)))
        #expect(Set(try properties(defs["stop"]).keys) == Set(StopKey.allCases.map(\.rawValue)))
        for name in ["job", "defaults", "pages", "stop"] {
            #expect((defs[name] as? [String: Any])?["additionalProperties"] as? Bool == false, "\(name)")
        }
        let job = try properties(defs["job"])
        for key in JobKey.allCases {
            let entry = try #require(job[key.rawValue] as? [String: Any])
            #expect((entry["description"] as? String)?.isEmpty == false, "\(key.rawValue)")
        }
        #expect(try #require(defs["job"] as? [String: Any])["required"] as? [String] == ["name", "url", "table"])
    }

    @Test("every default the schema states is the one the loader applies")
    func defaults() throws {
        let file = try JobFileLoader(environment: [:]).parse(text: """
            version: 1
            jobs:
              - { name: a, url: "https://example.com/x?page={page}", records: list, id: id, table: t_a }
            """, path: "jobs/x.yaml", folder: "jobs")
        let spec = try #require(file.jobs.first)
        let defs = try #require(try schema()["$defs"] as? [String: Any])
        let job = try properties(defs["job"])
        func value(_ key: JobKey) -> Any? { (job[key.rawValue] as? [String: Any])?["default"] }

        #expect(value(.method) as? String == spec.method.rawValue)
        #expect(value(.account) as? String == spec.account)
        #expect(value(.onChange) as? String == spec.onChange.rawValue)
        #expect(value(.prune) as? Bool == spec.prune)
        #expect(JobFileReader.duration(try #require(value(.timeout) as? String)) == spec.timeout)
        #expect(value(.retries) as? Int == spec.retries)
        #expect(value(.concurrency) as? Int == spec.concurrency)
        #expect(value(.downloadConcurrency) as? Int == spec.downloadConcurrency)
        #expect(JobFileReader.byteSize(try #require(value(.maxPageSize) as? String)) == spec.maxPageSize)
        #expect(JobFileReader.byteSize(try #require(value(.maxFileSize) as? String)) == spec.maxFileSize)
        let pages = try #require(value(.pages) as? [String: Int])
        #expect(pages == ["from": spec.pages.from, "step": spec.pages.step] && spec.pages.to == nil)
        #expect(value(.stop) as? [String: Bool] == ["empty": spec.stop.empty] && spec.stop.known == nil)
        let pagesKeys = try properties(defs["pages"])
        #expect((pagesKeys["from"] as? [String: Any])?["default"] as? Int == spec.pages.from)
        #expect((pagesKeys["step"] as? [String: Any])?["default"] as? Int == spec.pages.step)
        let stopKeys = try properties(defs["stop"])
        #expect((stopKeys["empty"] as? [String: Any])?["default"] as? Bool == spec.stop.empty)
        #expect((stopKeys["known"] as? [String: Any])?["default"] as? Bool == false && spec.stop.known == nil)
    }

    @Test("sizes are written as a job file would write them")
    func sizes() {
        #expect(sizeText(64 << 20) == "64MB")
        #expect(sizeText(1 << 30) == "1GB")
        #expect(sizeText(100 << 20) == "100MB")
        #expect(sizeText(1536) == "1536B")
    }
}
