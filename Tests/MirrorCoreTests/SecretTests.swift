import Foundation
import InMemoryLogging
import Logging
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorJobFile
@testable import MirrorModel
import MirrorTestSupport
import NIOCore
import Testing

private let secrets = ["KEY": "k3y-Q7Zp", "TOKEN": "t0ken-R2Wx", "HEADER": "h3ad-M9Lc"]

/// Echoes every secret it was sent back to the client: in next URLs, cursors, bodies
/// and error messages, as careless APIs do.
private func echo(_ request: FixtureRequest) -> FixtureResponse {
    let key = request.parameter("key") ?? ""
    let token = String(decoding: request.body, as: UTF8.self)
    let header = request.headers["x-api-key"] ?? ""
    switch request.path {
    case "/urls":
        switch request.parameter("page") {
        case "1": return .json(#"{"items":[{"id":"1"}],"next":"\#(request.base)/urls?page=2&key=\#(key)"}"#)
        case "2": return .json(#"{"items":[{"id":"2"}],"next":"\#(request.base)/urls?page=3&key=\#(key)"}"#)
        default: return .text("bad key \(key), token \(token), header \(header)", status: 500)
        }
    default:
        switch request.parameter("c") {
        case nil: return .json(#"{"items":[{"id":"3"}],"next":"c-\#(key)"}"#)
        default: return .json(#"{"items":"not a list: \#(key) \#(header)"}"#)
        }
    }
}

/// A secret a server's query parser cuts at its `&` and `=`: it gets `key=p@ss w/rd` back.
private let cutKey = "p@ss w/rd&SPECIAL=1"

/// `%2F` as `%2f`.
private func lowercaseHex(_ encoded: String) -> String {
    var out = "", rest = Substring(encoded)
    while let percent = rest.firstIndex(of: "%") {
        out += rest[..<percent] + rest[percent...].prefix(3).lowercased()
        rest = rest[percent...].dropFirst(3)
    }
    return out + rest
}

/// Echoes the key it was sent, in every form careless APIs use: into the next link (the
/// body's, PHP-escaped, or the Link header's) only its space encoded, so that the next
/// request cuts it at `&` and `=`; percent-encoded in upper and lower case hex and
/// form-encoded beside it; raw and encoded in its ETag and its Last-Modified. Page 3 is the last.
private func echoForms(_ request: FixtureRequest) -> FixtureResponse {
    let key = request.parameter("key") ?? ""
    let page = Int(request.parameter("page") ?? "") ?? 1
    let encoded = key.addingPercentEncodingForQuery()
    let next = "\(request.base)\(request.path)?page=\(page + 1)&key=\(key.replacingOccurrences(of: " ", with: "%20"))"
        + "&e=\(encoded)&l=\(lowercaseHex(encoded))&f=\(BodyTemplate.formEncoded(key))"
    var headers = [("ETag", "\"v-\(key)-\(encoded)\""), ("Last-Modified", "\(BodyTemplate.formEncoded(key)) \(key)")]
    let more = page < 3
    if request.path == "/link", more { headers.append(("Link", "<\(next)>; rel=\"next\"")) }
    let link = request.path == "/body" && more ? #""\#(next.replacingOccurrences(of: "/", with: "\\/"))""# : "null"
    return .json(#"{"items":[{"id":"\#(page)"}],"next":\#(link)}"#, headers: headers)
}

@Suite("secrets", .timeLimit(.minutes(6)))
struct SecretTests {
    @Test("values from ${…} appear nowhere: not in the summary, report, logs, errors, or any file of the output folder")
    func nowhere() async throws {
        let harness = try Harness()
        let yaml = """
            version: 1
            defaults:
              headers: { X-Api-Key: "${HEADER}" }
              retries: 1
            jobs:
              - name: urls
                url: "BASE/urls?page=1&key=${KEY}"
                method: POST
                body: { token: "${TOKEN}" }
                next: next
                records: items
                id: id
                table: t_item
              - name: cursors
                url: "BASE/cursors?c={cursor}&key=${KEY}"
                next: next
                records: items
                id: id
                table: t_cursor
            """
        var capture = InMemoryLogHandler()
        capture.logLevel = .trace
        let summary = try await FixtureServer.with(echo) { server in
            let file = try harness.load(yaml, server: server, environment: secrets)
            var options = Runner.Options()
            options.output = harness.output
            options.retry = RetryPolicy(baseDelay: 0.01)
            let runner = Runner(client: HTTPClient(),
                                logger: Logger(label: "t", factory: { [capture] _ in capture }))
            let summary = try await runner.run([file], options: options)
            // The secrets did reach the server.
            #expect(server.requests.contains { $0.parameter("key") == secrets["KEY"] && $0.headers["x-api-key"] == secrets["HEADER"] })
            #expect(server.requests.contains { String(decoding: $0.body, as: UTF8.self) == #"{"token":"t0ken-R2Wx"}"# })
            #expect(summary.jobs.map(\.error) == [
                "job 'urls': POST \(server.base)/urls?page=3&key=REDACTED: HTTP 500: unexpected status (internal server error): bad key REDACTED, token {\"token\":\"REDACTED\"}, header REDACTED (after 1 retry); page 3 not stored, pages 1-2 kept",
                "job 'cursors': GET \(server.base)/cursors?c=c-REDACTED&key=REDACTED: HTTP 200: 'items' is not an array (found string); page 2 not stored, page 1 kept",
            ])
            return summary
        }
        #expect(try harness.ids() == ["1", "2"])
        #expect(try harness.ids("t_cursor") == ["3"])
        let reportPath = harness.folder + "/report.json"
        try RunReport(summary: summary, exitStatus: 1, startedAt: "s", finishedAt: "f").write(to: reportPath)

        // Every byte under the test's folder but the job file: databases, WAL files, the report.
        let places = harness.writtenBytes([("summary", summary.reported),
                                           ("logs", capture.entries.map { "\($0.level) \($0.message) \($0.metadata)" }.joined(separator: "\n"))])
        #expect(places.contains { $0.0 == "cache/t_item.sqlite" })
        #expect(places.contains { $0.0 == "report.json" })
        #expect(!capture.entries.isEmpty)
        expectNoSecret(Array(secrets.values), in: places)
    }

    @Test("a secret a server echoes cut into pieces, encoded or not, in next links, validators and headers is kept and logged nowhere")
    func echoedInPieces() async throws {
        let harness = try Harness()
        let yaml = """
            version: 1
            defaults:
              records: items
              id: id
              retries: 0
            jobs:
              - { name: body, url: "BASE/body?page=1&key=${KEY}", next: next, table: t_body }
              - { name: link, url: "BASE/link?page=1&key=${KEY}", next: link, table: t_link }
            """
        var capture = InMemoryLogHandler()
        capture.logLevel = .trace
        try await FixtureServer.with(echoForms) { server in
            let file = try harness.load(yaml, server: server, environment: ["KEY": cutKey])
            var options = Runner.Options()
            options.output = harness.output
            let runner = Runner(client: HTTPClient(), logger: Logger(label: "t", factory: { [capture] _ in capture }))
            let summary = try await runner.run([file], options: options)
            #expect(summary.jobs.map(\.error) == [nil, nil])
            // The key came back cut: pages 2 and 3 were asked for with `p@ss w/rd` only.
            for path in ["/body", "/link"] {
                #expect(server.requests.filter { $0.path == path }.map { $0.parameter("key") ?? "" }
                    == [cutKey, "p@ss w/rd", "p@ss w/rd"])
            }
        }
        #expect(try harness.ids("t_body") == ["1", "2", "3"])
        #expect(try harness.ids("t_link") == ["1", "2", "3"])

        var forms: Set<String> = []
        for text in [cutKey, "p@ss w/rd", "SPECIAL"] {
            let encoded = text.addingPercentEncodingForQuery()
            forms.formUnion([text, encoded, lowercaseHex(encoded), BodyTemplate.formEncoded(text),
                             text.replacingOccurrences(of: " ", with: "%20"), text.replacingOccurrences(of: "/", with: "\\/")])
        }
        forms.formUnion(["p@ss", "p%40ss", "w/rd", "w%2Frd", "w%2frd"])
        // Every byte of the logs and of the SQLite files (WAL files too).
        var places: [(String, Data)] = [
            ("logs", Data(capture.entries.map { "\($0.level) \($0.message) \($0.metadata)" }.joined(separator: "\n").utf8)),
        ]
        for name in try FileManager.default.subpathsOfDirectory(atPath: harness.output) where name.contains(".sqlite") {
            places.append((name, try Data(contentsOf: URL(fileURLWithPath: harness.output + "/" + name))))
        }
        #expect(Set(places.map(\.0)).isSuperset(of: ["logs", "t_body.sqlite", "t_link.sqlite"]))
        #expect(capture.entries.contains { $0.message.description == "page stored" })
        for (place, bytes) in places {
            for form in forms.sorted() {
                #expect(bytes.range(of: Data(form.utf8)) == nil, "\(place) holds '\(form)'")
            }
        }
    }

    @Test("a redirect to another origin takes no header holding a secret, and never a body holding one")
    func redirects() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ _ in .json(#"{"items":[{"id":"b"}]}"#) }) { other in
            try await FixtureServer.with({ request in
                switch request.path {
                case "/same": return FixtureResponse(status: 302, headers: [("Location", "/target")], body: [])
                case "/away": return FixtureResponse(status: 302, headers: [("Location", "\(other.base)/target")], body: [])
                case "/post-away": return FixtureResponse(status: 307, headers: [("Location", "\(other.base)/target")], body: [])
                default: return .json(#"{"items":[{"id":"a"}]}"#)
                }
            }) { server in
                let yaml = """
                    version: 1
                    defaults:
                      headers: { X-Api-Key: "${K}", X-Trace: plain }
                      records: items
                      id: id
                      retries: 0
                    jobs:
                      - { name: same, url: "BASE/same", table: t_same }
                      - { name: away, url: "BASE/away", table: t_away }
                      - { name: post, url: "BASE/post-away", method: POST, body: { token: "${K}" }, table: t_post }
                    """
                let summary = try await harness.run(yaml, server: server, environment: ["K": "k3y-Q7Zp"])
                #expect(summary.jobs.map(\.error) == [
                    nil, nil,
                    "job 'post': POST \(server.base)/post-away: no response: HTTP 307 redirect to another host: a body holding a secret is not sent there; page 1 not stored, nothing stored",
                ])
                let same = server.requests.filter { $0.path == "/target" }
                #expect(same.map { $0.headers["x-api-key"] } == ["k3y-Q7Zp"])
                #expect(other.requests.map(\.target) == ["/target"])
                #expect(other.requests.map { $0.headers["x-api-key"] } == [nil])
                #expect(other.requests.map { $0.headers["x-trace"] } == ["plain"])
            }
        }
        #expect(try harness.ids("t_same") == ["a"])
        #expect(try harness.ids("t_away") == ["b"])
    }

    @Test("secrets are masked in every usual encoding; a text that already holds ${ is never stored for expansion")
    func encodings() {
        let redactor = Redactor(secrets: [Redactor.Secret(name: "K", value: "ab/cd= e")])
        #expect(redactor.redact("x?k=ab/cd= e") == "x?k=REDACTED")
        #expect(redactor.redact("x?k=ab%2Fcd%3D%20e") == "x?k=REDACTED")
        #expect(redactor.redact("x?k=ab%2fcd%3d%20e") == "x?k=REDACTED")
        #expect(redactor.redact("x?k=ab/cd=%20e") == "x?k=REDACTED")
        #expect(redactor.redact("x?k=ab%2Fcd%3D+e") == "x?k=REDACTED")
        #expect(redactor.placeholders("https://a.test/n?k=ab/cd= e&p=2") == "https://a.test/n?k=${K}&p=2")
        #expect(redactor.expand("https://a.test/n?k=${K}&p=2") == "https://a.test/n?k=ab/cd= e&p=2")
        #expect(redactor.placeholders("https://a.test/n?k=ab%2fcd%3d%20e") == nil)
        #expect(redactor.placeholders("https://evil.test/?k=${K}") == nil)
    }

    @Test("text is replaced byte for byte: every occurrence, adjacent ones, at either end, in any script")
    func replacingAll() {
        #expect("{page}-{page}{page}/x".replacingAll("{page}", with: "12") == "12-1212/x")
        #expect("aaaa".replacingAll("aa", with: "b") == "bb")
        #expect("aaa".replacingAll("aa", with: "") == "a")
        #expect("no placeholder".replacingAll("{page}", with: "1") == "no placeholder")
        #expect("ab".replacingAll("abc", with: "x") == "ab")
        #expect("".replacingAll("a", with: "x") == "")
        #expect("x".replacingAll("", with: "y") == "x")
        #expect("東京/s3cr€t/東京".replacingAll("s3cr€t", with: "${K}") == "東京/${K}/東京")
        #expect("Zürich Zürich".replacingAll("ü", with: "ue") == "Zuerich Zuerich")
        // The bytes of "e" inside a decomposed "é" are replaced too: a secret's bytes are masked wherever they are.
        #expect("e\u{301}".replacingAll("e", with: "x") == "x\u{301}")
    }

    @Test("a secret is masked however a server decodes, re-encodes, escapes or cuts it; common words and short pieces are not")
    func fragments() {
        let redactor = Redactor(secrets: [Redactor.Secret(name: "K", value: cutKey)])
        #expect(redactor.redact("/n?key=p@ss w/rd&SPECIAL=1&page=2") == "/n?key=REDACTED&page=2")
        #expect(redactor.redact("/n?key=p@ss%20w/rd&SPECIAL=1") == "/n?key=REDACTED")
        #expect(redactor.redact("/n?key=p%2540ss+w%2frd%26SPECIAL%3D1") == "/n?key=REDACTED")
        #expect(redactor.redact(#"{"next":"/n?key=p@ss w\/rd\u0026SPECIAL=1"}"#) == #"{"next":"/n?key=REDACTED"}"#)
        #expect(redactor.redact("/n?key=p@ss w/rd&amp;SPECIAL=1") == "/n?key=REDACTED")
        #expect(redactor.redact("/n?key=p%40ss%20w%2Frd&page=3") == "/n?key=REDACTED&page=3")
        #expect(redactor.redact(#"W/"SPECIAL", p@ss"#) == #"W/"REDACTED", REDACTED"#)
        #expect(redactor.redact("/n?page=2&w=rd") == "/n?page=2&w=rd")
        #expect(redactor.placeholders("/n?key=p@ss%20w/rd&page=2") == nil)
        let common = Redactor(secrets: [Redactor.Secret(name: "K", value: "Zq7&limit=token")])
        #expect(common.redact("/n?limit=10&token=abc&q=Zq7") == "/n?limit=10&token=abc&q=Zq7")
        #expect(common.redact("/n?limit=token") == "/n?REDACTED")
    }

    @Test("the tests' search for a secret finds it at the start, in the middle and at the end of a file, and nowhere else")
    func searchFindsSecrets() {
        for text in ["hunter2 at the start", "in the hunter2 middle", "at the end hunter2"] {
            withKnownIssue { expectNoSecret(["hunter2"], in: [("file", Array(text.utf8))]) }
        }
        expectNoSecret(["hunter2"], in: [("file", Array("hunter hunter3 unter2 hunter".utf8))])
    }
}

@Suite("secrets by type", .timeLimit(.minutes(6)))
struct SecretTypeTests {
    /// Every way Swift prints a value.
    func printed(_ value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return [String(describing: value), String(reflecting: value), "\(value)", dumped]
    }

    @Test("specs, templates, headers, requests and errors built from a job with secrets print, dump and reflect masked")
    func neverPrinted() throws {
        let harness = try Harness()
        let yaml = """
            version: 1
            jobs:
              - name: items
                url: "http://api.test/items/${TOKEN}?page={page}&key=${KEY}"
                method: POST
                body: { token: "${TOKEN}", page: "{page}" }
                headers: { X-Api-Key: "${HEADER}", Accept: application/json }
                records: data.list
                id: id
                table: t_item
            """
        let job = try harness.load(yaml, environment: secrets).jobs[0]
        let url = job.url.url(page: 1, cursor: "c-\(secrets["KEY"]!)", redactor: job.redactor)
        let request = HTTPRequest(method: job.method.rawValue, url: url, headers: job.headers,
                                  body: job.body?.render(page: 1, cursor: nil), timeout: job.timeout, maxBytes: 1 << 20,
                                  redactor: job.redactor)
        let error = HTTPError.classify(IOError(errnoCode: ECONNREFUSED, reason: "connect"), url: url, status: nil)
        let values: [Any] = [job, job.url, job.body as Any, job.headers, job.redactor, url, request, error,
                             RedactedText(real: "echo \(secrets["TOKEN"]!)", redactor: job.redactor),
                             Redactor.Secret(name: "KEY", value: secrets["KEY"]!)]
        for value in values {
            for text in printed(value) {
                for secret in secrets.values {
                    #expect(!text.contains(secret), "\(type(of: value)) printed a secret: \(text)")
                }
            }
        }
        // What is printed still says what it is.
        #expect("\(request)" == "POST http://api.test/items/REDACTED?page=1&key=REDACTED [X-Api-Key, Accept] (31 bytes)")
        #expect("\(job.body!)" == #"{"token":"REDACTED","page":"{page}"}"#)
        #expect("\(job.redactor)" == "Redactor(HEADER, KEY, TOKEN)")
        // And the real values are what is sent.
        #expect(request.headers.map { $0.value.real } == [secrets["HEADER"]!, "application/json"])
        #expect(String(decoding: request.body ?? [], as: UTF8.self) == #"{"token":"t0ken-R2Wx","page":1}"#)
    }

    @Test("a credential an API echoes in the form mirror sends it (Basic's base64 of user:password) is stored nowhere and never replayed")
    func echoedCredentialForms() async throws {
        let harness = try Harness()
        let basic = "Basic " + Data("u:PW-SECRET-2".utf8).base64EncodedString()
        #expect(basic == "Basic dTpQVy1TRUNSRVQtMg==")
        let yaml = """
            version: 1
            auth:
              api: { type: basic, username: u, password: "${PW}" }
            jobs:
              - { name: items, url: "BASE/items?page={page}", records: data.list, id: id, table: t_item, auth: api, concurrency: 1 }
            """
        let api = try await FixtureServer.with({ request in
            let sent = request.headers["authorization"] ?? ""
            let list = request.parameter("page") == "1" ? #"{"id":"1"}"# : ""
            return .json(#"{"data":{"list":[\#(list)]},"echo":"\#(sent)","who":"\#(sent.dropFirst(6))"}"#,
                         headers: [("X-Echo", sent), ("X-Who", String(sent.dropFirst(6))), ("X-Total-Count", "1")])
        }) { server in
            let summary = try await harness.run(yaml, server: server, environment: ["PW": "PW-SECRET-2"])
            #expect(summary.jobs.map(\.error) == [nil])
            #expect(Set(server.requests.map { $0.headers["authorization"] }) == [basic])
            return server.base
        }
        let pages = try harness.typedRows("SELECT url, headers, envelope FROM _mirror_pages ORDER BY url")
        let headers = #"text:[["content-type","application/json"],["x-total-count","1"]]"#
        #expect(pages == [
            ["text:\(api)/items?page=1", headers, #"text:{"data":{"list":[]},"echo":"Basic REDACTED","who":"REDACTED"}"#],
            ["text:\(api)/items?page=2", headers, #"text:{"data":{"list":[]},"echo":"Basic REDACTED","who":"REDACTED"}"#],
        ])
        try await serving(harness) { base in
            let page = try await get(base + "/items?page=1")
            #expect(page.text == #"{"data":{"list":[{"id":"1"}]},"echo":"Basic REDACTED","who":"REDACTED"}"#)
            #expect(page.headers["x-echo"] == nil && page.headers["x-who"] == nil && page.headers["x-total-count"] == "1")
            #expect(!page.text.contains("dTpQVy1TRUNSRVQtMg") && !page.headers.values.contains { $0.contains("dTpQVy1TRUNSRVQtMg") })
        }
        for (place, bytes) in harness.writtenBytes() {
            #expect(bytes.firstRange(of: Array("dTpQVy1TRUNSRVQtMg".utf8)) == nil, "\(place)")
        }
    }
}
