import Foundation
import GRDB
import Logging
@testable import MirrorCore
@testable import MirrorFiles
@testable import MirrorHTTP
@testable import MirrorJobFile
@testable import MirrorModel
@testable import MirrorStore
@testable import MirrorExport
import MirrorTestSupport
import Testing

/// A fresh temporary folder for one test, with helpers to write job files, run them
/// against a fixture server and read the resulting SQLite files. The folder is removed
/// when the harness goes, at the end of the test's scope, however the test ends.
final class Harness: Sendable {
    private let temporary: TemporaryFolder
    var folder: String { temporary.path }

    init() throws {
        temporary = try TemporaryFolder()
        Telemetry.record()
    }

    var output: String { folder + "/cache" }

    /// Writes `yaml` (with `BASE` replaced by the server's base URL) to jobs.yaml and loads it.
    func load(_ yaml: String, server: FixtureServer? = nil, environment: [String: String] = [:]) throws -> JobFile {
        let text = server.map { yaml.replacingOccurrences(of: "BASE", with: $0.base) } ?? yaml
        let path = folder + "/jobs.yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return try JobFileLoader(environment: environment).load(path: path)
    }

    /// Loads and runs a job file; the output folder is `output` unless the file sets one.
    /// Its requests, downloads and retries read `clock`.
    func run(_ yaml: String, server: FixtureServer, maxPages: Int? = nil, jobs: [String] = [],
             environment: [String: String] = [:], refresh: Bool = false,
             limiter: RateLimiter = RateLimiter(), pagesAhead: Int? = nil, clock: RunClock = .continuous,
             retry: RetryPolicy = RetryPolicy(baseDelay: 0.01), maxTime: Duration? = nil,
             signals: StopSignals = .none) async throws -> RunSummary {
        let file = try load(yaml, server: server, environment: environment)
        var options = Runner.Options()
        options.output = output
        options.maxPages = maxPages
        options.jobs = jobs
        options.refresh = refresh
        options.retry = retry
        options.maxTime = maxTime
        options.signals = signals
        if let pagesAhead { options.pagesAhead = pagesAhead }
        return try await Runner(client: HTTPClient(clock: clock), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
                                limiter: limiter)
            .run([file], options: options)
    }

    func database(_ name: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        return try DatabaseQueue(path: output + "/" + name, configuration: configuration)
    }

    /// The rows of `sql` on `database`, each value as `typeof:value` (`null` for NULL).
    func typedRows(_ sql: String, _ arguments: StatementArguments = [], database: String = "t_item.sqlite") throws -> [[String]] {
        try MirrorTestSupport.typedRows(self.database(database), sql, arguments)
    }

    /// The stored ids of a table in walk order.
    func ids(_ table: String = "t_item", database: String? = nil, account: String? = nil) throws -> [String] {
        try self.database(database ?? "\(table).sqlite").read { db in
            if let account {
                return try String.fetchAll(db, sql: "SELECT id FROM \"\(table)\" WHERE account = ? ORDER BY position", arguments: [account])
            }
            return try String.fetchAll(db, sql: "SELECT id FROM \"\(table)\" ORDER BY account, position")
        }
    }

    /// The stored record text for one id.
    func record(_ id: String, table: String = "t_item", account: String = "") throws -> String? {
        try database("\(table).sqlite").read { db in
            try String.fetchOne(db, sql: "SELECT record FROM \"\(table)\" WHERE account = ? AND id = ?", arguments: [account, id])
        }
    }

    /// Every file under the test's folder but the job file (databases, WAL files, reports,
    /// token stores), by path, after `extra` places (a summary, logs).
    func writtenBytes(_ extra: [(String, String)] = []) -> [(place: String, bytes: [UInt8])] {
        var places = extra.map { (place: $0.0, bytes: Array($0.1.utf8)) }
        places.append(("metrics and spans", Array(Telemetry.said.utf8)))
        let enumerator = FileManager.default.enumerator(atPath: folder)
        while let path = enumerator?.nextObject() as? String {
            guard path != "jobs.yaml", let data = FileManager.default.contents(atPath: folder + "/" + path) else { continue }
            places.append((path, Array(data)))
        }
        return places
    }

    /// Runs an export into a byte array.
    func export(_ options: Exporter.Options) throws -> String {
        let path = folder + "/export-\(UUID().uuidString)"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var sink = OutputSink(descriptor: descriptor)
        let database = try RecordReader.locate(table: options.selection.table, in: output)
        try Exporter(database: database, options: options).export(to: &sink)
        close(descriptor)
        return try String(contentsOfFile: path, encoding: .utf8)
    }
}

/// A job file with one job, `items`, on `url` (`BASE` stands for the fixture server),
/// its records at `data.list`, ids at `id`, stored in `t_item`; `keys` are more YAML lines
/// of the job; `output` sets the file's output folder.
func itemsJob(_ keys: String = "", url: String = "BASE/items?page={page}", output: String? = nil) -> String {
    """
    version: 1
    \(output.map { "output: \($0)" } ?? "")
    jobs:
      - name: items
        url: "\(url)"
        records: data.list
        id: id
        table: t_item
    \(keys.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
    """
}

/// A paged fake API: `pages[n]` is the record list of page n (1-based); pages past the end are empty.
struct PagedAPI {
    let pages: [[String]]

    /// Each record is `{"id":"<id>","n":<page>}` unless given whole.
    init(ids: [[String]]) {
        pages = ids.enumerated().map { index, ids in ids.map { #"{"id":"\#($0)","page":\#(index + 1)}"# } }
    }

    init(records: [[String]]) {
        pages = records
    }

    func body(page: Int, extra: String = "") -> String {
        let list = page >= 1 && page <= pages.count ? pages[page - 1] : []
        return #"{"data":{"list":[\#(list.joined(separator: ","))],"page":\#(page)\#(extra)}}"#
    }
}

/// None of `secrets` is anywhere in `places`.
func expectNoSecret(_ secrets: [String], in places: [(place: String, bytes: [UInt8])],
                    sourceLocation: SourceLocation = #_sourceLocation) {
    for (place, bytes) in places {
        for secret in secrets where !secret.isEmpty {
            let hit = bytes.firstRange(of: Array(secret.utf8)) != nil
            #expect(!hit, "\(place) holds '\(secret)'", sourceLocation: sourceLocation)
        }
    }
}

extension RunSummary {
    /// Every job's outcome as `--report` writes it: each value a summary line prints is in it.
    var reported: String {
        (try? JobOutcome.encoder(pretty: false).encode(jobs)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }
}
