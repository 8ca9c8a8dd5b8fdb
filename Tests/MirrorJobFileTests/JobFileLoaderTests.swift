import Foundation
@testable import MirrorJobFile
@testable import MirrorJSON
@testable import MirrorModel
import Testing

@Suite("job files", .timeLimit(.minutes(6)))
struct JobFileLoaderTests {
    func diagnostics(_ yaml: String, environment: [String: String] = [:]) -> [String] {
        do {
            _ = try JobFileLoader(environment: environment).parse(text: yaml, path: "jobs/x.yaml", folder: "jobs")
            return []
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    @Test("a complete job file loads with defaults applied")
    func loads() throws {
        let yaml = """
            version: 1
            output: ../cache
            defaults:
              headers: { User-Agent: "mirror/1" }
              timeout: 5m
              records: data.list
            jobs:
              - name: events
                url: "https://api.example.com/v3/EventList?cityId=1&page={page}&key=${KEY}"
                pages: { from: 0, to: 49, step: 10 }
                id: idstr
                table: t_item
                stop: { status: 404, last_page: data.pages, known: true }
                on_change: keep
                prune: true
                account: "${ACCOUNT}"
                concurrency: 8
                refresh_after: 12h
                max_page_size: 500KB
                downloads: [cover.url, images.*.url]
                download_concurrency: 16
                max_file_size: 50MB
              - name: plain
                url: "https://api.example.com/v3/Plain"
                id: id
                table: t_plain
            """
        let file = try JobFileLoader(environment: ["KEY": "k", "ACCOUNT": "acc"]).parse(text: yaml, path: "jobs/x.yaml", folder: "jobs")
        #expect(file.output == "jobs/../cache")
        let job = try #require(file.jobs.first)
        #expect(job.name == "events")
        #expect(job.url.redacted == "https://api.example.com/v3/EventList?cityId=1&page={page}&key=REDACTED")
        #expect(job.url.url(page: 20, cursor: nil, redactor: job.redactor).real == "https://api.example.com/v3/EventList?cityId=1&page=20&key=k")
        #expect(job.pages == .init(from: 0, to: 49, step: 10))
        #expect(job.records == JSONPath("data.list"))
        #expect(job.id == JSONPath("idstr"))
        #expect(job.database == "t_item.sqlite")
        #expect(job.account == "acc")
        #expect(job.stop == .init(empty: true, known: .page, statuses: [404], lastPage: JSONPath("data.pages")))
        #expect(job.onChange == .keep)
        #expect(job.prune)
        #expect(job.timeout == 300)
        #expect(job.concurrency == 8 && job.refreshAfter == 12 * 3600 && job.maxPageSize == 500 * 1024)
        let plain = try #require(file.jobs.last)
        #expect(plain.concurrency == 4 && plain.refreshAfter == nil && plain.maxPageSize == 64 * 1024 * 1024)
        #expect(job.downloads == [JSONPath("cover.url")!, JSONPath("images.*.url")!])
        #expect(job.downloadConcurrency == 16 && job.maxFileSize == 50 * 1024 * 1024)
        #expect(plain.downloads.isEmpty && plain.downloadConcurrency == 8 && plain.maxFileSize == 100 * 1024 * 1024)
        #expect(job.headers.map(\.name) == ["User-Agent"])
        #expect(job.method == .get)
    }

    @Test("every config error is reported at once, sorted, as FILE:LINE:COLUMN")
    func allErrors() {
        let yaml = """
            version: 1
            jobs:
              - name: events
                url: "https://x.test/e?page={page}"
                pagse: { from: 1 }
                records: data.list
                id: id
                table: t_item
                timeout: 30 seconds
              - name: events
                url: "https://x.test/f?a=${ACCOUNT}"
                records: data.list
                id: id
                table: 1bad
                concurrency: 0
                refresh_after: soon
                max_page_size: 64 megabytes
                downloads: [cover.url, "images..url"]
                download_concurrency: 100
                max_file_size: big
            """
        #expect(diagnostics(yaml) == [
            "jobs/x.yaml:5:5: unknown key 'pagse' in job (did you mean 'pages'?)",
            "jobs/x.yaml:9:14: 'timeout' must be a duration such as 30s, 5m or 12h, not '30 seconds'",
            "jobs/x.yaml:11:10: environment variable ACCOUNT is not set",
            "jobs/x.yaml:14:12: table name '1bad' must match [A-Za-z_][A-Za-z0-9_]* and not start with '_mirror_' or 'sqlite_'",
            "jobs/x.yaml:15:18: 'concurrency' must be between 1 and 64, not 0",
            "jobs/x.yaml:16:20: 'refresh_after' must be a duration such as 30s, 5m, 12h or 7d, not 'soon'",
            "jobs/x.yaml:17:20: 'max_page_size' must be a size such as 500KB, 64MB or 1GB, not '64 megabytes'",
            "jobs/x.yaml:18:28: 'downloads' must be a dot path such as 'data.list' ('.' for the whole response) or a JSON Pointer such as '/@odata.nextLink', not 'images..url'",
            "jobs/x.yaml:19:27: 'download_concurrency' must be between 1 and 64, not 100",
            "jobs/x.yaml:20:20: 'max_file_size' must be a size such as 500KB, 50MB or 1GB, not 'big'",
        ])
    }

    @Test("a table named sqlite, in any case, is a config error at its table line: SQLite reserves its index's name")
    func reservedByItsIndex() {
        let yaml = """
            version: 1
            jobs:
              - { name: a, url: "https://x.test/a?page={page}", records: l, id: id, table: sqlite3, database: sqlite_a.sqlite }
              - { name: b, url: "https://x.test/b?page={page}", records: l, id: id, table: sqlite }
              - name: c
                parent: a
                url: "https://x.test/c/{parent.id}"
                records: l
                id: id
                table: SQLite
              - { name: d, url: "https://x.test/d", records: l, id: id, table: Sqlite_d }
            """
        #expect(diagnostics(yaml) == [
            "jobs/x.yaml:4:80: table name 'sqlite' would name its index 'sqlite_walk_order', and SQLite reserves names "
                + "starting with 'sqlite_' for itself: name the table otherwise",
            "jobs/x.yaml:10:12: table name 'SQLite' would name its index 'SQLite_walk_order', and SQLite reserves names "
                + "starting with 'sqlite_' for itself: name the table otherwise",
            "jobs/x.yaml:11:68: table name 'Sqlite_d' must match [A-Za-z_][A-Za-z0-9_]* and not start with '_mirror_' or 'sqlite_'",
        ])
    }

    @Test("duplicate job names point at both definitions")
    func duplicateNames() {
        let yaml = """
            version: 1
            jobs:
              - { name: a, url: "https://x.test/1", records: l, id: id, table: t }
              - { name: a, url: "https://x.test/2", records: l, id: id, table: t }
            """
        #expect(diagnostics(yaml) == ["jobs/x.yaml:4:13: duplicate job name 'a' (first defined at 3:13)"])
    }

    @Test("missing keys, a wrong version and bad values are named")
    func missingAndWrong() {
        let yaml = """
            version: 2
            jobs:
              - name: "bad name"
                url: ftp://x.test/
                method: PUT
                pages: { from: 5, to: 1, step: 0 }
                stop: { empty: maybe, status: [700] }
                on_change: merge
                prune: yes
                next: "a..b"
            """
        #expect(diagnostics(yaml) == [
            "jobs/x.yaml:1:10: unsupported version '2': this mirror reads version 1",
            "jobs/x.yaml:3:5: job 'bad name' is missing required key 'records'",
            "jobs/x.yaml:3:5: job 'bad name' is missing required key 'id'",
            "jobs/x.yaml:3:5: job 'bad name' is missing required key 'table'",
            "jobs/x.yaml:3:11: job name 'bad name' must use only letters, digits, '_' and '-'",
            "jobs/x.yaml:4:10: 'url' of job 'bad name' must start with http:// or https://, not 'ftp://x.test/'",
            "jobs/x.yaml:5:13: 'method' must be GET or POST, not 'PUT'",
            "jobs/x.yaml:6:27: 'pages.to' (1) is below 'pages.from' (5)",
            "jobs/x.yaml:6:36: 'pages.step' must be between 1 and 1000000, not 0",
            "jobs/x.yaml:7:20: 'stop.empty' must be true or false, not 'maybe'",
            "jobs/x.yaml:7:36: 'stop.status' must list HTTP statuses such as [404, 410]",
            "jobs/x.yaml:8:16: 'on_change' must be replace or keep, not 'merge'",
            "jobs/x.yaml:9:12: 'prune' must be true or false, not 'yes'",
            "jobs/x.yaml:10:11: 'next' must be a path in the response such as 'paging.next', or 'link', not 'a..b'",
        ])
    }

    @Test("every number is range-checked when the file is loaded, the range named, however many digits it has")
    func numbersOutOfRange() {
        let huge = "1" + String(repeating: "0", count: 400)
        let yaml = """
            version: 1
            jobs:
              - name: a
                url: "https://x.test/?page={page}"
                records: data
                id: id
                table: t
                pages: { from: 9223372036854775800, to: -1, step: 9223372036854775807 }
                timeout: \(huge)s
                retries: 9223372036854775807
                concurrency: 99999999999999999999
                download_concurrency: -3
                max_page_size: 99999999999999999999GB
                max_file_size: 1025GB
                refresh_after: 300000000000d
                rate_limit: 9223372036854775807/s
              - name: b
                url: "https://x.test/?page={page}"
                records: data
                id: id
                table: t2
                pages: { step: 0, from: \(huge) }
                timeout: 0.5ms
                retries: -1
                max_page_size: 0KB
                refresh_after: 0s
            """
        #expect(diagnostics(yaml) == [
            "jobs/x.yaml:8:20: 'pages.from' must be between 0 and 1000000000000, not 9223372036854775800",
            "jobs/x.yaml:8:45: 'pages.to' must be between 0 and 1000000000000, not -1",
            "jobs/x.yaml:8:55: 'pages.step' must be between 1 and 1000000, not 9223372036854775807",
            "jobs/x.yaml:9:14: 'timeout' must be between 1ms and 7d, not '\(huge)s'",
            "jobs/x.yaml:10:14: 'retries' must be between 0 and 100, not 9223372036854775807",
            "jobs/x.yaml:11:18: 'concurrency' must be between 1 and 64, not 99999999999999999999",
            "jobs/x.yaml:12:27: 'download_concurrency' must be between 1 and 64, not -3",
            "jobs/x.yaml:13:20: 'max_page_size' must be between 1B and 1GB, not '99999999999999999999GB'",
            "jobs/x.yaml:14:20: 'max_file_size' must be between 1B and 1024GB, not '1025GB'",
            "jobs/x.yaml:15:20: 'refresh_after' must be between 1ms and 3650d, not '300000000000d'",
            "jobs/x.yaml:16:17: 'rate_limit' must allow between 1 and 1000000 requests per s, m or h, not '9223372036854775807/s'",
            "jobs/x.yaml:22:20: 'pages.step' must be between 1 and 1000000, not 0",
            "jobs/x.yaml:22:29: 'pages.from' must be between 0 and 1000000000000, not \(huge)",
            "jobs/x.yaml:23:14: 'timeout' must be between 1ms and 7d, not '0.5ms'",
            "jobs/x.yaml:24:14: 'retries' must be between 0 and 100, not -1",
            "jobs/x.yaml:25:20: 'max_page_size' must be between 1B and 1GB, not '0KB'",
            "jobs/x.yaml:26:20: 'refresh_after' must be between 1ms and 3650d, not '0s'",
        ])
    }

    @Test("the bounds themselves load: a walk from the last page value by the largest step cannot overflow")
    func numbersAtTheirBounds() throws {
        let file = try JobFileLoader(environment: [:]).parse(text: """
            version: 1
            jobs:
              - name: a
                url: "https://x.test/?page={page}"
                records: data
                id: id
                table: t
                pages: { from: 1000000000000, to: 1000000000000, step: 1000000 }
                timeout: 604800000ms
                retries: 100
                max_page_size: 1GB
                max_file_size: 1024GB
                refresh_after: 3650d
                rate_limit: 1000000/h
            """, path: "jobs/x.yaml", folder: "jobs")
        let job = try #require(file.jobs.first)
        #expect(job.pages == .init(from: 1_000_000_000_000, to: 1_000_000_000_000, step: 1_000_000))
        #expect(job.timeout == 7 * 86_400 && job.refreshAfter == 3650 * 86_400 && job.retries == 100)
        #expect(job.maxPageSize == 1 << 30 && job.maxFileSize == 1 << 40 && job.rateLimit == RateLimit("1000000/h"))
        // Pages past `Int.max` would take (Int.max - from) / step walks of pages.
        #expect((Int.max - JobLimits.page.upperBound) / JobLimits.step.upperBound > 9_000_000_000_000)
    }

    @Test("an output folder that is a file, or would be made inside one, is a config error")
    func outputIsAFile() throws {
        let folder = NSTemporaryDirectory() + "mirror-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "".write(toFile: folder + "/cache", atomically: true, encoding: .utf8)
        func diagnostics(output: String) -> [String] {
            let yaml = """
                version: 1
                output: \(output)
                jobs:
                  - { name: a, url: "https://x.test/", records: l, id: id, table: t }
                """
            do {
                _ = try JobFileLoader(environment: [:]).parse(text: yaml, path: "jobs/x.yaml", folder: folder)
                return []
            } catch {
                return error.diagnostics.map(\.description)
            }
        }
        #expect(diagnostics(output: "cache") == ["jobs/x.yaml:2:9: output folder 'cache' is a file"])
        #expect(diagnostics(output: "cache/today") == [
            "jobs/x.yaml:2:9: output folder 'cache/today' cannot be made: '\(folder)/cache' is a file",
        ])
        #expect(diagnostics(output: "fresh/today").isEmpty)
        #expect(diagnostics(output: ".").isEmpty)
    }

    @Test("a file that is not UTF-8 is reported at its first bad byte")
    func notUTF8() throws {
        let folder = NSTemporaryDirectory() + "mirror-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Latin-1: "café" and "naïve" each in one byte a letter; the first, 0xE9, is not UTF-8 here.
        let latin1 = Array("version: 1\n# caf".utf8) + [0xE9] + Array(" \u{2014} na".utf8) + [0xEF, 0x76, 0x65, 0x0A]
        try Data(latin1).write(to: URL(fileURLWithPath: folder + "/latin1.yaml"))
        #expect(throws: ConfigError.self) { try JobFileLoader().load(path: folder + "/latin1.yaml") }
        do {
            _ = try JobFileLoader().load(path: folder + "/latin1.yaml")
        } catch {
            #expect(error.description == "\(folder)/latin1.yaml:2:6: not UTF-8 text (byte 0xe9)")
        }
        // UTF-16, as some editors save: its byte-order mark is not UTF-8.
        try Data([0xFF, 0xFE] + Array("v\0".utf8)).write(to: URL(fileURLWithPath: folder + "/utf16.yaml"))
        do {
            _ = try JobFileLoader().load(path: folder + "/utf16.yaml")
        } catch {
            #expect(error.description == "\(folder)/utf16.yaml:1:1: not UTF-8 text (byte 0xff)")
        }
        // Characters before the bad byte count one column each, however many bytes they take.
        #expect(JobFileLoader.firstInvalidUTF8(Array("é—\u{1F600}".utf8) + [0x80]) == (1, 4, 0x80))
    }

    /// Nine nested lists of ten aliases each: 10⁹ values once expanded, in a dozen lines.
    /// Each line starts with `lead`.
    static func aliasBomb(lead: String) -> String {
        let names = "abcdefghi".map(String.init)
        var lines = [lead + #"a: &a ["x","x","x","x","x","x","x","x","x","x"]"#]
        for (previous, name) in zip(names, names.dropFirst()) {
            lines.append(lead + "\(name): &\(name) [" + Array(repeating: "*\(previous)", count: 10).joined(separator: ",") + "]")
        }
        return lines.joined(separator: "\n")
    }

    @Test("an alias used as a mapping key is refused before the YAML is composed", .timeLimit(.minutes(6)))
    func aliasAsKey() {
        for (key, column) in [("*i: 1", 3), ("? *i", 5), ("{ *i : 1 }", 5)] {
            let yaml = """
                version: 1
                \(Self.aliasBomb(lead: ""))
                x:
                  \(key)
                jobs:
                  - { name: a, url: "https://x.test/", records: l, id: id, table: t }
                """
            #expect(diagnostics(yaml) == ["jobs/x.yaml:12:\(column): an alias cannot be a mapping key"], "\(key)")
        }
        // Quoted or commented, a `*name:` is no alias; an alias as a value is read as ever.
        #expect(JobFileLoader.aliasKey(in: "a: \"*b: c\"\nd: '*e: f' # *g: h\ni: *j\nk: [*l, *m]\n") == nil)
        #expect(JobFileLoader.aliasKey(in: "- *a: 1\n") != nil)
    }

    @Test("an alias bomb is refused at once, in a POST body or anywhere else", .timeLimit(.minutes(6)))
    func aliasBomb() {
        let inBody = """
            version: 1
            jobs:
              - name: a
                url: "https://x.test/"
                method: POST
                records: data
                id: id
                table: t
                body:
            \(Self.aliasBomb(lead: "      "))
            """
        #expect(diagnostics(inBody) == ["jobs/x.yaml:13:10: aliases here expand to more than 10000 values"])
        let atTop = """
            version: 1
            \(Self.aliasBomb(lead: ""))
            jobs:
              - { name: a, url: "https://x.test/", method: POST, records: l, id: id, table: t, body: *i }
            """
        #expect(diagnostics(atTop) == ["jobs/x.yaml:5:4: aliases here expand to more than 10000 values"])
        // Aliases that repeat a little are read as ever.
        #expect(diagnostics("""
            version: 1
            defaults:
              headers: &h { User-Agent: mirror }
            jobs:
              - { name: a, url: "https://x.test/", method: POST, records: l, id: id, table: t, body: [*h, *h] }
            """).isEmpty)
    }

    @Test("invalid YAML is reported with its position")
    func invalidYAML() {
        #expect(diagnostics("version: 1\njobs: [\n  {name: a\n") == [
            "jobs/x.yaml:4:1: invalid YAML: while parsing a flow mapping, did not find expected ',' or '}'",
        ])
    }

    @Test("a job file without version or jobs says so")
    func emptyFile() {
        #expect(diagnostics("output: x\n") == [
            "jobs/x.yaml:1:1: missing required key 'version' (version: 1)",
            "jobs/x.yaml:1:1: missing required key 'jobs'",
        ])
        #expect(diagnostics("- a\n") == ["jobs/x.yaml:1:1: a job file must be a mapping with 'version' and 'jobs'"])
    }

    @Test("{cursor} needs a next path; defaults cannot set name, url or table")
    func structure() {
        let yaml = """
            version: 1
            defaults:
              table: t
              records: data
            jobs:
              - name: a
                url: "https://x.test/?c={cursor}"
                id: id
                table: t
            """
        #expect(diagnostics(yaml) == [
            "jobs/x.yaml:3:3: 'table' cannot be set in defaults",
            "jobs/x.yaml:7:10: 'url' of job 'a' uses {cursor} but 'next' gives no cursor",
        ])
    }

    @Test("a key set twice in one mapping is an error")
    func duplicateKey() {
        let yaml = """
            version: 1
            jobs:
              - name: a
                url: "https://x.test/"
                id: id
                id: key
                records: data
                table: t
            """
        #expect(diagnostics(yaml) == ["jobs/x.yaml:5:5: duplicate key 'id'"])
    }

    @Test("an unset variable is named, never a value; a missing file is reported")
    func environmentAndFiles() throws {
        #expect(diagnostics("""
            version: 1
            jobs:
              - { name: a, url: "https://x.test/${HOST_KEY}", records: l, id: id, table: t, headers: { X-Key: "${SECRET}" } }
            """, environment: ["HOST_KEY": "abc"]) == ["jobs/x.yaml:3:99: environment variable SECRET is not set"])
        // A bad value that came from the environment is shown masked; a header that would
        // break the request names the header, never its value.
        #expect(diagnostics("""
            version: 1
            jobs:
              - { name: a, url: "https://x.test/", records: l, id: id, table: t, timeout: "${T}", headers: { X-Key: "${K}" } }
            """, environment: ["T": "soon-s3cret", "K": "k3y\n"]) == [
            "jobs/x.yaml:3:79: 'timeout' must be a duration such as 30s, 5m or 12h, not 'REDACTED'",
            "jobs/x.yaml:3:105: header 'X-Key' must not hold control characters such as a line break (check the environment variable's value)",
        ])
        #expect(throws: ConfigError.self) { try JobFileLoader().load(path: "/nonexistent/jobs.yaml") }
        do {
            _ = try JobFileLoader().load(path: "/nonexistent/jobs.yaml")
        } catch {
            #expect(error.description == "/nonexistent/jobs.yaml:1:1: cannot read the file: no such file")
        }
    }

    @Test("every key whose value is a word takes it plain, single-quoted or double-quoted", arguments: ["", "'", "\""])
    func quotedWords(quote: String) throws {
        func q(_ word: String) -> String { quote + word + quote }
        let yaml = """
            version: 1
            not_secret: [\(q("CITY"))]
            jobs:
              - name: a
                url: "https://api.example.com/a?city=${CITY}&page={page}"
                method: \(q("post"))
                records: data
                id: id
                table: t_a
                stop: { known: \(q("record")) }
                on_change: \(q("keep"))
                timeout: \(q("30s"))
                rate_limit: \(q("5/s"))
                refresh_after: \(q("12h"))
                max_page_size: \(q("500KB"))
                downloads: [cover]
                max_file_size: \(q("50MB"))
                min_download_rate: \(q("1KB"))
              - name: b
                url: "https://api.example.com/b?since={since}&page={page}"
                records: data
                id: id
                table: t_b
                stop: { known: \(q("page")) }
                incremental: { from: \(q("last_run")), lookback: \(q("10m")) }
            """
        let file = try JobFileLoader(environment: ["CITY": "7"]).parse(text: yaml, path: "jobs/x.yaml", folder: "jobs")
        let a = try #require(file.jobs.first)
        let b = try #require(file.jobs.last)
        #expect(a.url.redacted == "https://api.example.com/a?city=7&page={page}")
        #expect(a.method == .post)
        #expect(a.stop.known == .record)
        #expect(a.onChange == .keep)
        #expect(a.timeout == 30)
        #expect(a.rateLimit?.count == 5 && a.rateLimit?.seconds == 1)
        #expect(a.refreshAfter == 43_200)
        #expect(a.maxPageSize == 500 * 1024)
        #expect(a.maxFileSize == 50 * 1024 * 1024)
        #expect(a.minDownloadRate == 1024)
        #expect(b.stop.known == .page)
        #expect(b.incremental == JobSpec.Incremental(source: .lastRun, lookback: 600))
    }

    @Test("true and false are booleans only when plain: a quoted one is a word 'stop.known' does not take")
    func quotedBooleans() {
        let yaml = """
            version: 1
            jobs:
              - { name: a, url: "https://api.example.com/a?page={page}", records: data, id: id, table: t_a, stop: { known: "true" } }
            """
        #expect(diagnostics(yaml) == ["jobs/x.yaml:3:112: 'stop.known' must be true, false, page, record or since, not 'true'"])
    }

    @Test("format: ndjson and csv read records without 'records'; paths into the body are refused where they are written")
    func formats() throws {
        let file = try JobFileLoader(environment: [:]).parse(text: """
            version: 1
            defaults:
              records: data
            jobs:
              - { name: a, url: "https://x.test/a?page={page}", format: ndjson, id: id, table: t_a }
              - { name: b, url: "https://x.test/b", format: jsonl, id: id, table: t_b, next: { header: X-Next } }
              - { name: c, url: "https://x.test/c", format: csv, id: id, table: t_c, next: link, stop: { short: 50 } }
              - { name: d, url: "https://x.test/d", format: csv, csv: { delimiter: "\\t" }, id: id, table: t_d }
              - { name: e, url: "https://x.test/e", format: json, id: id, table: t_e }
            """, path: "jobs/x.yaml", folder: "jobs")
        #expect(file.jobs.map(\.format) == [.ndjson, .ndjson, .csv(delimiter: UInt8(ascii: ",")), .csv(delimiter: 0x09), .json])
        #expect(file.jobs.map(\.records.description) == [".", ".", ".", ".", "data"])

        #expect(diagnostics("""
            version: 1
            jobs:
              - name: a
                url: "https://x.test/a?page={page}"
                format: ndjson
                records: data.list
                id: id
                table: t_a
              - name: b
                url: "https://x.test/b"
                format: csv
                next: body.next
                stop: { total: meta.total }
                id: id
                table: t_b
              - { name: c, url: "https://x.test/c", format: yaml, records: feed, id: id, table: t_c }
              - { name: d, url: "https://x.test/d", records: l, csv: { delimiter: ";" }, id: id, table: t_d }
              - { name: e, url: "https://x.test/e", format: csv, csv: { delimiter: ";;" }, validate: { a: array }, id: id, table: t_e }
            """) == [
            "jobs/x.yaml:6:5: 'records' does not apply to job 'a', whose format ndjson makes each line a record: remove it",
            "jobs/x.yaml:12:11: 'next' of job 'b' is a path in the response, which format csv has none of: "
                + "page it by 'next: link', 'next: { header: NAME }' or {page} in the url",
            "jobs/x.yaml:13:13: 'stop.total' of job 'b' is a path in the response, which format csv has none of: "
                + "stop on an empty page (the default) or 'stop.short'",
            "jobs/x.yaml:16:49: 'format' of job 'c' must be json, ndjson, jsonl, csv or xml, not 'yaml'",
            "jobs/x.yaml:17:53: 'csv' of job 'd' goes with 'format: csv' only",
            "jobs/x.yaml:18:72: 'csv.delimiter' of job 'e' must be one ASCII character such as ';' or a tab (\"\\t\"), "
                + "not a quote or line break, not ';;'",
            "jobs/x.yaml:18:80: 'validate' of job 'e' checks paths in the response, which format csv has none of: remove it",
        ])
    }

    @Test("format: xml takes 'records' as an element path and paths into the body for next, stop and validate")
    func xmlFormat() throws {
        let file = try JobFileLoader(environment: [:]).parse(text: """
            version: 1
            jobs:
              - name: a
                url: "https://x.test/feed"
                format: xml
                records: feed.entry
                next: { url: "feed.link[@rel=next].@href" }
                stop: { total: feed.total }
                id: id
                table: t_a
            """, path: "jobs/x.yaml", folder: "jobs")
        #expect(file.jobs.map(\.format) == [.xml])
        #expect(file.jobs.map(\.records.description) == ["feed.entry"])
        #expect(file.jobs[0].next == .url(JSONPath("feed.link[@rel=next].@href")!))

        #expect(diagnostics("""
            version: 1
            jobs:
              - { name: a, url: "https://x.test/a", format: xml, id: id, table: t_a }
              - { name: b, url: "https://x.test/b", format: xml, records: feed.entry, csv: { delimiter: ";" }, id: id, table: t_b }
            """) == [
            "jobs/x.yaml:3:5: job 'a' is missing required key 'records'",
            "jobs/x.yaml:4:75: 'csv' of job 'b' goes with 'format: csv' only",
        ])
    }
}
