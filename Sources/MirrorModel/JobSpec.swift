import Foundation
package import MirrorJSON

/// A loaded, validated job file.
package struct JobFile: Sendable {
    /// The path as the user gave it (used in messages).
    package let path: String
    /// The `output:` folder resolved against the file's folder, if the file sets one.
    package let output: String?
    package let jobs: [JobSpec]

    package init(path: String, output: String? = nil, jobs: [JobSpec]) {
        self.path = path
        self.output = output
        self.jobs = jobs
    }
}

/// One job of a job file, with `defaults` applied and `${…}` resolved.
package struct JobSpec: Sendable {
    package enum Method: String, Sendable { case get = "GET", post = "POST" }
    package enum OnChange: String, Sendable { case replace, keep }

    /// What a response body is (`format`). NDJSON and CSV are read as a JSON array of their
    /// records, whose records path is `.`; XML as the JSON its elements map to.
    package enum Format: Sendable, Equatable {
        case json
        /// JSON Lines: each line that is not blank is one record.
        case ndjson
        /// A header row naming the fields, then one record per row, split at `delimiter`.
        case csv(delimiter: UInt8)
        /// An XML document, read as the JSON its elements map to; `records` is an element path.
        case xml

        /// How a job file and messages name it.
        package var name: String {
            switch self {
            case .json: "json"
            case .ndjson: "ndjson"
            case .csv: "csv"
            case .xml: "xml"
            }
        }
    }

    /// How the walk finds the next page after `{page}` has been advanced.
    package enum Next: Sendable, Equatable {
        /// A path in the body holding the next cursor, or the next URL: an http(s) URL, or
        /// a relative one (`/…`, `?…`, `./…`, `../…`, resolved against the request URL).
        case path(JSONPath)
        /// A path in the body holding the next URL, absolute or relative.
        case url(JSONPath)
        /// A path in the body holding the next cursor, whatever it looks like.
        case cursor(JSONPath)
        /// A response header holding the next cursor or URL, told apart as `path` does.
        case header(String)
        /// A scroll cursor: the same on every page (Intercom, Elasticsearch). The walk
        /// ends on an empty page; a page repeating the one before is a loop. `request`,
        /// when the API continues a scroll elsewhere (Elasticsearch's `_search/scroll`),
        /// is the URL of every request after the first.
        case scroll(JSONPath, request: RequestTemplate?)
        /// The RFC 8288 `Link: <…>; rel="next"` header.
        case link

        /// A scroll walk: one request, asked again with the same cursor.
        package var isScroll: Bool {
            if case .scroll = self { return true }
            return false
        }

        /// The walk has a cursor to put in `{cursor}`.
        package var givesCursor: Bool {
            switch self {
            case .path, .cursor, .header, .scroll: return true
            case .url, .link: return false
            }
        }
    }

    package struct Pages: Sendable, Equatable {
        package var from: Int
        package var to: Int?
        package var step: Int
        package static let `default` = Pages(from: 1, to: nil, step: 1)
    }

    package struct Stop: Sendable, Equatable {
        /// What `stop.known` ends a walk at.
        package enum Known: String, Sendable, Equatable {
            /// A page whose records were all stored before.
            case page
            /// The first record stored before (newest-first feeds).
            case record
            /// A page whose oldest `incremental` value is at or below `{since}` (newest-first
            /// feeds whose edited records move to the top).
            case since
        }

        package var empty: Bool
        package var known: Known?
        package var statuses: Set<Int>
        package var lastPage: JSONPath?
        /// The response's count of records in the whole walk.
        package var total: JSONPath?
        /// The response's flag saying whether pages follow (`has_more`).
        package var hasMore: JSONPath? = nil
        /// A page of fewer records than this is the last one.
        package var short: Int? = nil
        /// The response's count of pages in the whole walk.
        package var pages: JSONPath? = nil
        package static let `default` = Stop(empty: true, known: nil, statuses: [], lastPage: nil, total: nil)

        /// Responses announce the last page: `last_page`, or a count of `pages`.
        package var announcesLastPage: Bool { lastPage != nil || pages != nil }
    }

    /// `incremental`: where `{since}` comes from.
    package struct Incremental: Sendable, Equatable {
        package enum Source: Sendable, Equatable {
            /// The highest value at this path among the job's stored records.
            case path(JSONPath)
            /// The start time of the job's last complete walk.
            case lastRun
        }

        package var source: Source
        /// `{since}` while there is nothing to take it from; none: `{since}` is empty.
        package var initial: SinceValue?
        /// Seconds `{since}` is moved back by, when it is a time.
        package var lookback: Double?

        package init(source: Source, initial: SinceValue? = nil, lookback: Double? = nil) {
            self.source = source
            self.initial = initial
            self.lookback = lookback
        }
    }

    /// `deleted`: the records that say they are gone.
    package struct Deleted: Sendable, Equatable {
        package var path: JSONPath
        /// The value there that marks a deleted record; none: any value but false, null,
        /// 0 and the empty string.
        package var equals: String?

        package init(path: JSONPath, equals: String? = nil) {
            self.path = path
            self.equals = equals
        }

        /// Whether the record whose root is `record` is marked deleted.
        package func marks(_ record: JSONValue) -> Bool {
            guard let value = record.value(at: path) else { return false }
            if let equals {
                switch value.kind {
                case .string: return value.stringValue == equals
                case .number, .bool: return value.rawText == equals
                case .object, .array, .null: return false
                }
            }
            switch value.kind {
            case .bool: return value.boolValue == true
            case .string: return !(value.stringValue ?? "").isEmpty
            case .number: return Double(value.rawText) != 0
            case .null, .object, .array: return false
            }
        }
    }

    /// `max_page_size` when the job does not set it.
    package static let defaultMaxPageSize = 64 << 20
    /// `max_wait` when the job does not set it: five minutes, well inside a cron interval;
    /// a longer wait (an hourly quota's reset) defers the job to a later run.
    package static let defaultMaxWait = 300.0
    /// `max_file_size` when the job does not set it.
    package static let defaultMaxFileSize = 100 << 20
    /// `min_download_rate` when the job does not set it: bytes per second.
    package static let defaultMinDownloadRate = 1 << 10

    package let name: String
    package internal(set) var url: RequestTemplate
    package let method: Method
    /// JSON body template: `{page}` and `{cursor}` are filled in when a request is built.
    package internal(set) var body: BodyTemplate?
    /// Header values may hold secrets: they are sent, never shown.
    package internal(set) var headers: [Header]
    package let pages: Pages
    package let next: Next?
    /// What a response body is: paths into it (`records`, `next`, `stop`) are JSON's only.
    package let format: Format
    package let records: JSONPath
    package let id: JSONPath
    package let table: String
    package let database: String
    package let account: String
    package let stop: Stop
    package let onChange: OnChange
    package let prune: Bool
    /// Other jobs store into the same table under the same account, on purpose.
    package let shareTable: Bool
    /// Seconds.
    package let timeout: Double
    /// Retries after a network error, a timeout, a 5xx, 408 or 429.
    package let retries: Int
    /// Requests per time to this job's host, shared with every job of the run on that host.
    package let rateLimit: RateLimit?
    /// Seconds: the longest wait the API may ask for (its quota spent, `Retry-After`) before
    /// the job is deferred instead.
    package let maxWait: Double
    /// Requests in flight for this job; pages still commit in walk order.
    package internal(set) var concurrency: Int
    /// Seconds: a page fetched less than this long ago is not requested again.
    package let refreshAfter: Double?
    /// A page response body larger than this is rejected.
    package let maxPageSize: Int
    /// Page and file requests carry the W3C `traceparent` of their span (`propagate_trace`).
    package var propagateTrace = false
    /// Paths inside a record whose values are URLs (or arrays of URLs) of files to fetch.
    package let downloads: [JSONPath]
    /// Downloads in flight for this job.
    package let downloadConcurrency: Int
    /// A larger download is abandoned and reported.
    package let maxFileSize: Int
    /// Bytes per second: a slower download is abandoned once it has run for `timeout`; 0 never.
    package let minDownloadRate: Int
    /// Paths a response must hold, with their kinds, in file order.
    package let validate: [(path: JSONPath, kind: JSONKind)]
    /// Every value of this job that came from `${…}`.
    package let redactor: Redactor
    package internal(set) var incremental: Incremental? = nil
    package internal(set) var deleted: Deleted? = nil
    /// The job this one walks once per record of (`parent`).
    package internal(set) var parent: String? = nil
    /// How its requests say who sends them; none: its headers alone.
    package let auth: AuthSpec?
    /// `shard:`: the shard of `mirror run --shard I/N` this job and its group are pinned to.
    package internal(set) var shard: ShardPin? = nil
    /// `columns:`: generated columns of its record table, in file order.
    package internal(set) var columns: [RecordColumn] = []
    /// `explode:`: lists of each record read as rows of views of its record table, in file order.
    package internal(set) var explode: [ExplodedList] = []
    /// `drop:` and `hash:`: what each record loses before it is stored; none: it is stored as served.
    package internal(set) var redaction: RecordRedaction? = nil
    /// The jobs whose parent this one is.
    package var children: [String] = []
    /// A header held `{since}` or `{parent.…}`, filled in before the walk.
    var headersFilled = false
    /// `{since}` of this walk, once filled in (`stop.known: since` compares pages with it).
    package var since: SinceValue?

    package init(
        name: String,
        url: RequestTemplate,
        method: Method,
        body: BodyTemplate? = nil,
        headers: [Header],
        pages: Pages,
        next: Next? = nil,
        format: Format = .json,
        records: JSONPath,
        id: JSONPath,
        table: String,
        database: String,
        account: String,
        stop: Stop,
        onChange: OnChange,
        prune: Bool,
        shareTable: Bool,
        timeout: Double,
        retries: Int,
        rateLimit: RateLimit? = nil,
        maxWait: Double = JobSpec.defaultMaxWait,
        concurrency: Int,
        refreshAfter: Double? = nil,
        maxPageSize: Int,
        downloads: [JSONPath],
        downloadConcurrency: Int,
        maxFileSize: Int,
        minDownloadRate: Int,
        validate: [(path: JSONPath, kind: JSONKind)],
        redactor: Redactor,
        incremental: Incremental? = nil,
        deleted: Deleted? = nil,
        parent: String? = nil,
        auth: AuthSpec? = nil,
        shard: ShardPin? = nil,
        columns: [RecordColumn] = [],
        explode: [ExplodedList] = [],
        redaction: RecordRedaction? = nil,
        children: [String] = [],
        headersFilled: Bool = false,
        since: SinceValue? = nil
    ) {
        self.name = name
        self.url = url
        self.method = method
        self.body = body
        self.headers = headers
        self.pages = pages
        self.next = next
        self.format = format
        self.records = records
        self.id = id
        self.table = table
        self.database = database
        self.account = account
        self.stop = stop
        self.onChange = onChange
        self.prune = prune
        self.shareTable = shareTable
        self.timeout = timeout
        self.retries = retries
        self.rateLimit = rateLimit
        self.maxWait = maxWait
        self.concurrency = concurrency
        self.refreshAfter = refreshAfter
        self.maxPageSize = maxPageSize
        self.downloads = downloads
        self.downloadConcurrency = downloadConcurrency
        self.maxFileSize = maxFileSize
        self.minDownloadRate = minDownloadRate
        self.validate = validate
        self.redactor = redactor
        self.incremental = incremental
        self.deleted = deleted
        self.parent = parent
        self.auth = auth
        self.shard = shard
        self.columns = columns
        self.explode = explode
        self.redaction = redaction
        self.children = children
        self.headersFilled = headersFilled
        self.since = since
    }

    /// The origin of the job's first request: a request to another (a next link, a file on
    /// a CDN) gets no header or body holding a secret.
    package var origin: Origin? { Origin(url.url(page: pages.from, cursor: nil, redactor: redactor).real) }

    /// A header value holds `{page}` or `{cursor}`: requests differing only there share a
    /// URL and body, so no stored copy of one stands for another.
    package var headersCarryPaging: Bool {
        headersFilled || headers.contains { $0.value.real.contains("{page}") || $0.value.real.contains("{cursor}") }
    }

    /// The URL of one request: a scroll's own request once there is a cursor, else `url`.
    package func requestURL(page: Int, cursor: String?) -> RedactedURL {
        if case let .scroll(_, request?) = next, let cursor, !cursor.isEmpty {
            return request.url(page: page, cursor: cursor, redactor: redactor)
        }
        return url.url(page: page, cursor: cursor, redactor: redactor)
    }
}

/// A URL template with `{page}` and `{cursor}` placeholders, whose secrets print redacted.
package struct RequestTemplate: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The template as sent.
    package let real: String
    /// The template with every `${…}` value masked.
    package let shown: String

    package init(real: String, shown: String) {
        self.real = real
        self.shown = shown
    }

    package var redacted: String { shown }
    package var description: String { shown }
    package var debugDescription: String { shown }
    package var customMirror: Mirror { Mirror(self, children: ["template": shown]) }

    package var usesPage: Bool { real.contains("{page}") }

    /// The URL for one page: the page value and the cursor (percent-encoded) filled in.
    /// Without a cursor (the first request), a query parameter whose value is `{cursor}`
    /// is left out rather than sent empty.
    package func url(page: Int, cursor: String?, redactor: Redactor) -> RedactedURL {
        func fill(_ template: String, cursor: String) -> String {
            let template = cursor.isEmpty ? Self.withoutParameters(valued: "{cursor}", in: template) : template
            return template.replacingAll("{page}", with: String(page))
                .replacingAll("{cursor}", with: cursor.addingPercentEncodingForQuery())
        }
        // A cursor the API sent may echo a secret: mask it in the shown form too.
        return RedactedURL(real: fill(real, cursor: cursor ?? ""), shown: fill(shown, cursor: redactor.redact(cursor ?? "")))
    }

    /// `template` without the query parameters whose value is exactly `placeholder`.
    static func withoutParameters(valued placeholder: String, in template: String) -> String {
        guard let question = template.firstIndex(of: "?") else { return template }
        let end = template[question...].firstIndex(of: "#") ?? template.endIndex
        let parameters = template[template.index(after: question) ..< end].split(separator: "&", omittingEmptySubsequences: false)
        let kept = parameters.filter { parameter in
            guard let equals = parameter.firstIndex(of: "=") else { return true }
            return parameter[parameter.index(after: equals)...] != placeholder
        }
        guard kept.count < parameters.count else { return template }
        return String(template[..<question]) + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&")) + template[end...]
    }
}

/// A POST body: JSON text in which a string that is exactly `"{page}"` becomes the page
/// number, a string that is exactly `"{cursor}"` the cursor (a number when the API gave
/// a number; left out with its key while there is no cursor yet), and `{page}` /
/// `{cursor}` inside other strings are replaced in place. A form body
/// (`application/x-www-form-urlencoded`) is a flat mapping sent as `name=value&…`. It
/// prints, dumps and reflects with its secrets masked.
package struct BodyTemplate: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package let json: String
    /// The template with every `${…}` value masked.
    package let description: String
    /// Sent form-encoded rather than as JSON.
    package let form: Bool
    /// A value of the template came from `${…}`.
    package var holdsSecret: Bool { json != description }

    package init(json: String, redactor: Redactor, form: Bool = false) {
        self.json = json
        description = redactor.redact(json)
        self.form = form
    }

    package init(json: String, description: String, form: Bool) {
        self.json = json
        self.description = description
        self.form = form
    }

    package var debugDescription: String { description }
    package var customMirror: Mirror { Mirror(self, children: ["json": description]) }

    /// The body of one request. `shown` renders the masked template (for what is stored
    /// and logged): pass it a masked cursor.
    package func render(page: Int, cursor: String?, cursorIsNumber: Bool = false, shown: Bool = false) -> [UInt8] {
        let template = shown ? description : json
        guard let document = try? JSONDocument(parsing: Array(template.utf8)) else { return Array(template.utf8) }
        var out: [UInt8] = []
        let renderer = Renderer(values: [
            .init(placeholder: "{page}", text: String(page), isNumber: true),
            .init(placeholder: "{cursor}", text: cursor ?? "", isNumber: cursorIsNumber),
        ])
        if form {
            renderer.form(document.root, into: &out)
        } else {
            renderer.json(document.root, into: &out)
        }
        return out
    }

    /// Fills placeholders into a parsed template. A string that is exactly a placeholder
    /// becomes its value, a number when the value is one; a member (or form parameter)
    /// whose value is exactly a placeholder without a value is left out; placeholders
    /// inside other strings are replaced in place.
    struct Renderer {
        package struct Value {
            let placeholder: String
            package let text: String
            package let isNumber: Bool
        }

        package let values: [Value]

        /// A member or parameter whose value is exactly a placeholder with no value yet.
        func omits(_ value: JSONValue) -> Bool {
            value.kind == .string && values.contains { $0.text.isEmpty && value.stringValue == $0.placeholder }
        }

        package func filled(_ text: String) -> String {
            values.reduce(text) { text, value in text.replacingAll(value.placeholder, with: value.text) }
        }

        package func json(_ value: JSONValue, into out: inout [UInt8]) {
            switch value.kind {
            case .object:
                out.append(UInt8(ascii: "{"))
                var first = true
                for (key, member) in value.members where !omits(member) {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    JSONText.appendQuoted(key, to: &out)
                    out.append(UInt8(ascii: ":"))
                    json(member, into: &out)
                }
                out.append(UInt8(ascii: "}"))
            case .array:
                out.append(UInt8(ascii: "["))
                for (index, element) in value.elements.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    json(element, into: &out)
                }
                out.append(UInt8(ascii: "]"))
            case .string:
                let text = value.stringValue ?? ""
                if let exact = values.first(where: { $0.placeholder == text }), exact.isNumber, !exact.text.isEmpty {
                    out += Array(exact.text.utf8)
                } else {
                    JSONText.appendQuoted(filled(text), to: &out)
                }
            case .number, .bool, .null:
                out += value.rawBytes
            }
        }

        package func form(_ value: JSONValue, into out: inout [UInt8]) {
            var first = true
            for (key, member) in value.members where !omits(member) {
                if !first { out.append(UInt8(ascii: "&")) }
                first = false
                out += Array(BodyTemplate.formEncoded(key).utf8)
                out.append(UInt8(ascii: "="))
                let text = member.kind == .string ? filled(member.stringValue ?? "") : member.kind == .null ? "" : member.rawText
                out += Array(BodyTemplate.formEncoded(text).utf8)
            }
        }
    }

    /// `application/x-www-form-urlencoded`: letters, digits and `-._*` as they are, a
    /// space as `+`, every other byte as `%XX`.
    static func formEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "A") ... UInt8(ascii: "Z"),
                 UInt8(ascii: "0") ... UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "*"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                out += "+"
            default:
                out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }
}
