import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import MirrorExport
import MirrorJobFile
import MirrorJSON
package import MirrorModel
import MirrorStore

/// The read API under `/_mirror/`: what an output folder holds, as JSON, read-only. Each
/// answer is one read transaction of one database: a run writing meanwhile is not seen
/// half-way, and is never blocked. A request it cannot answer throws an `HTTPError` (400,
/// 404, 410), which `JSONErrors` writes as JSON.
package struct ReadAPI: Sendable {
    /// An answer: status, content type, body and headers.
    package struct Answer: Sendable {
        package var status: Int
        package var contentType = "application/json"
        package var body: [UInt8]
        package var headers: [(String, String)] = []

        static func json(_ text: String, status: Int = 200) -> Answer {
            Answer(status: status, body: Array((text + "\n").utf8))
        }

        /// `{"error": "…"}` with `status`.
        static func error(_ message: String, status: Int) -> Answer {
            var body = Array("{\"error\":".utf8)
            JSONText.appendQuoted(message, to: &body)
            body.append(contentsOf: "}\n".utf8)
            return Answer(status: status, body: body)
        }

        /// The answer as Hummingbird sends it: a 304 has no body and no `Content-Type`.
        var response: Response {
            Response(status: .init(code: status), headers: fields,
                     body: status == 304 ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
        }

        /// Its headers as sent: `Content-Type` (but on a 304), then `headers`.
        var fields: HTTPFields {
            var fields = HTTPFields()
            if status != 304 { fields[.contentType] = contentType }
            for (name, value) in headers {
                if let name = HTTPField.Name(name) { fields[name] = value }
            }
            return fields
        }
    }

    /// Records or changes a request gets when it names no `limit`, and the most it may name:
    /// an answer is held whole in memory, so it is bounded.
    package static let defaultLimit = 1000
    package static let maxLimit = 10_000

    package let output: String
    package let jobFiles: [JobFile]

    package init(output: String, jobFiles: [JobFile] = []) {
        self.output = output
        self.jobFiles = jobFiles
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }()

    /// `mirror status --json` of the output folder.
    package func status() throws -> Answer {
        let report = try StatusReader.read(folder: output, jobFiles: jobFiles)
        return Answer(status: 200, body: Array(try Self.encoder.encode(report)) + [0x0A])
    }

    /// The status page: every job and table, in HTML.
    package func statusPage() throws -> Answer {
        let report = try StatusReader.read(folder: output, jobFiles: jobFiles)
        return Answer(status: 200, contentType: "text/html; charset=utf-8", body: Array(StatusPage.html(report).utf8))
    }

    /// Each table: its database, records, accounts and the last run of the jobs that store into it.
    package func tables() throws -> Answer {
        struct Entry: Encodable {
            var table: String
            var database: String
            var records: Int
            var accounts: Int
            var lastRun: String?
            var lastResult: String?
            var columns: [TableColumn]
        }
        let report = try StatusReader.read(folder: output, jobFiles: jobFiles)
        let entries = try report.tables.map { table in
            let last = report.jobs.filter { $0.table == table.table && $0.database == table.database }
                .compactMap(\.lastRun).max { $0.finishedAt < $1.finishedAt }
            let database = (output as NSString).appendingPathComponent(table.database)
            return Entry(table: table.table, database: table.database, records: table.records, accounts: table.accounts,
                         lastRun: last?.finishedAt, lastResult: last?.status.rawValue,
                         columns: try RecordReader(database: database).columns(of: table.table))
        }
        return Answer(status: 200, body: Array(try Self.encoder.encode(["tables": entries])) + [0x0A])
    }

    /// A table's records as a JSON array, chosen and ordered as `export` does (`account`,
    /// `since_id`, `max_id`, `limit`, `offset`, `order`); a full answer links to the next.
    package func records(table: String, query: [String: String], path: String) throws -> Answer {
        var selection = RecordSelection(table: table)
        selection.account = query["account"]
        selection.sinceID = query["since_id"]
        selection.maxID = query["max_id"]
        let limit = try Self.limit(query["limit"])
        selection.limit = limit
        selection.offset = try query["offset"].map { try Self.count($0, name: "offset") }
        if let order = query["order"] {
            guard let value = RecordSelection.Order(rawValue: order) else {
                throw HTTPError(.badRequest, message: "'order' must be walk or id, not '\(order)'")
            }
            selection.order = value
        }
        let database = try locate(table)
        var body: [UInt8] = [UInt8(ascii: "[")]
        var count = 0
        try RecordReader(database: database).read(selection) { cursor in
            while let record = try cursor.next() {
                body.append(contentsOf: (count == 0 ? "\n" : ",\n").utf8)
                body.append(contentsOf: record.record)
                count += 1
            }
        }
        body.append(contentsOf: (count == 0 ? "]\n" : "\n]\n").utf8)
        var answer = Answer(status: 200, body: body)
        if limit > 0, count == limit {
            var next = query
            next["offset"] = String((selection.offset ?? 0) + count)
            answer.headers.append(("Link", "<\(path)?\(Self.queryString(next))>; rel=\"next\""))
        }
        return answer
    }

    /// A table's change feed since `since`, as `export --changes-since --format json` writes it.
    package func changes(table: String, query: [String: String]) throws -> Answer {
        guard let since = query["since"] else {
            throw HTTPError(.badRequest, message: "'since' is missing: the mark to read from (0: all)")
        }
        var options = ChangeExporter.Options(table: table, since: try Self.count(since, name: "since"))
        options.limit = try Self.limit(query["limit"])
        options.format = .json
        options.feed = query["feed"]
        options.account = query["account"]
        let database = try locate(table)
        var bytes: [UInt8] = []
        do {
            _ = try ChangeExporter(database: database, options: options).export { bytes.append(contentsOf: $0) }
        } catch let unreachable as ChangeFeed.Unreachable {
            throw HTTPError(.gone, message: unreachable.description)
        }
        return Answer(status: 200, body: bytes)
    }

    /// The database that holds `table`; 404 when none does.
    private func locate(_ table: String) throws -> String {
        do {
            return try RecordReader.locate(table: table, in: output)
        } catch {
            throw HTTPError(.notFound, message: error.description)
        }
    }

    private static func count(_ text: String, name: String) throws -> Int {
        guard let value = Int(text), value >= 0 else {
            throw HTTPError(.badRequest, message: "'\(name)' must be a whole number, not '\(text)'")
        }
        return value
    }

    private static func limit(_ text: String?) throws -> Int {
        guard let text else { return defaultLimit }
        let value = try count(text, name: "limit")
        guard value <= maxLimit else { throw HTTPError(.badRequest, message: "'limit' must be at most \(maxLimit), not \(value)") }
        return value
    }

    /// `a=1&b=2`, in key order, percent-encoded.
    static func queryString(_ query: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return query.sorted { $0.key < $1.key }.map { key, value in
            "\(key.addingPercentEncoding(withAllowedCharacters: allowed) ?? key)="
                + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)
        }.joined(separator: "&")
    }
}
