import Foundation

/// A loaded, validated job file.
public struct JobFile: Sendable {
    /// The path as the user gave it (used in messages).
    public let path: String
    /// The `output:` folder resolved against the file's folder, if the file sets one.
    public let output: String?
    public let jobs: [JobSpec]
}

/// One job of a job file, with `defaults` applied and `${…}` resolved.
public struct JobSpec: Sendable {
    public enum Method: String, Sendable { case get = "GET", post = "POST" }
    public enum OnChange: String, Sendable { case replace, keep }

    /// How the walk finds the next page after `{page}` has been advanced.
    public enum Next: Sendable, Equatable {
        /// A path in the body holding the next cursor, or the next URL: an http(s) URL, or
        /// a relative one (`/…`, `?…`, `./…`, `../…`, resolved against the request URL).
        case path(JSONPath)
        /// A path in the body holding the next URL, absolute or relative.
        case url(JSONPath)
        /// A path in the body holding the next cursor, whatever it looks like.
        case cursor(JSONPath)
        /// A response header holding the next cursor or URL, told apart as `path` does.
        case header(String)
        /// The RFC 8288 `Link: <…>; rel="next"` header.
        case link

        /// The walk has a cursor to put in `{cursor}`.
        var givesCursor: Bool {
            switch self {
            case .path, .cursor, .header: return true
            case .url, .link: return false
            }
        }
    }

    public struct Pages: Sendable, Equatable {
        public var from: Int
        public var to: Int?
        public var step: Int
        public static let `default` = Pages(from: 1, to: nil, step: 1)
    }

    public struct Stop: Sendable, Equatable {
        /// What `stop.known` ends a walk at.
        public enum Known: String, Sendable, Equatable {
            /// A page whose records were all stored before.
            case page
            /// The first record stored before (newest-first feeds).
            case record
        }

        public var empty: Bool
        public var known: Known?
        public var statuses: Set<Int>
        public var lastPage: JSONPath?
        /// The response's count of records in the whole walk.
        public var total: JSONPath?
        /// The response's flag saying whether pages follow (`has_more`).
        public var hasMore: JSONPath? = nil
        /// A page of fewer records than this is the last one.
        public var short: Int? = nil
        /// The response's count of pages in the whole walk.
        public var pages: JSONPath? = nil
        public static let `default` = Stop(empty: true, known: nil, statuses: [], lastPage: nil, total: nil)

        /// Responses announce the last page: `last_page`, or a count of `pages`.
        var announcesLastPage: Bool { lastPage != nil || pages != nil }
    }

    /// `max_page_size` when the job does not set it.
    public static let defaultMaxPageSize = 64 << 20
    /// `max_file_size` when the job does not set it.
    public static let defaultMaxFileSize = 100 << 20
    /// `min_download_rate` when the job does not set it: bytes per second.
    public static let defaultMinDownloadRate = 1 << 10

    public let name: String
    public let url: RequestTemplate
    public let method: Method
    /// JSON body template: `{page}` and `{cursor}` are filled in when a request is built.
    public let body: BodyTemplate?
    /// Header values may hold secrets: they are sent, never shown.
    public let headers: [Header]
    public let pages: Pages
    public let next: Next?
    public let records: JSONPath
    public let id: JSONPath
    public let table: String
    public let database: String
    public let account: String
    public let stop: Stop
    public let onChange: OnChange
    public let prune: Bool
    /// Other jobs store into the same table under the same account, on purpose.
    public let shareTable: Bool
    /// Seconds.
    public let timeout: Double
    /// Retries after a network error, a timeout, a 5xx, 408 or 429.
    public let retries: Int
    /// Requests per time to this job's host, shared with every job of the run on that host.
    public let rateLimit: RateLimit?
    /// Requests in flight for this job; pages still commit in walk order.
    public let concurrency: Int
    /// Seconds: a page fetched less than this long ago is not requested again.
    public let refreshAfter: Double?
    /// A page response body larger than this is rejected.
    public let maxPageSize: Int
    /// Paths inside a record whose values are URLs (or arrays of URLs) of files to fetch.
    public let downloads: [JSONPath]
    /// Downloads in flight for this job.
    public let downloadConcurrency: Int
    /// A larger download is abandoned and reported.
    public let maxFileSize: Int
    /// Bytes per second: a slower download is abandoned once it has run for `timeout`; 0 never.
    public let minDownloadRate: Int
    /// Paths a response must hold, with their kinds, in file order.
    public let validate: [(path: JSONPath, kind: JSONKind)]
    /// Every value of this job that came from `${…}`.
    public let redactor: Redactor

    /// The origin of the job's first request: a request to another (a next link, a file on
    /// a CDN) gets no header or body holding a secret.
    var origin: HTTPClient.Origin? { HTTPClient.Origin(url.url(page: pages.from, cursor: nil, redactor: redactor).real) }
}

/// A URL template with `{page}` and `{cursor}` placeholders, whose secrets print redacted.
public struct RequestTemplate: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The template as sent.
    let real: String
    /// The template with every `${…}` value masked.
    let shown: String

    public var redacted: String { shown }
    public var description: String { shown }
    public var debugDescription: String { shown }
    public var customMirror: Mirror { Mirror(self, children: ["template": shown]) }

    public var usesCursor: Bool { real.contains("{cursor}") }
    public var usesPage: Bool { real.contains("{page}") }

    /// The URL for one page: the page value and the cursor (percent-encoded) filled in.
    public func url(page: Int, cursor: String?, redactor: Redactor) -> RedactedURL {
        func fill(_ template: String, cursor: String) -> String {
            template.replacingAll("{page}", with: String(page))
                .replacingAll("{cursor}", with: cursor.addingPercentEncodingForQuery())
        }
        // A cursor the API sent may echo a secret: mask it in the shown form too.
        return RedactedURL(real: fill(real, cursor: cursor ?? ""), shown: fill(shown, cursor: redactor.redact(cursor ?? "")))
    }
}

/// A POST body: JSON text in which a string that is exactly `"{page}"` becomes the page
/// number, and `{page}` / `{cursor}` inside other strings are replaced in place. It prints,
/// dumps and reflects with its secrets masked.
public struct BodyTemplate: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let json: String
    /// The template with every `${…}` value masked.
    public let description: String

    init(json: String, redactor: Redactor) {
        self.json = json
        description = redactor.redact(json)
    }

    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["json": description]) }

    public func render(page: Int, cursor: String?) -> [UInt8] {
        var cursorText: [UInt8] = []
        JSONText.appendQuoted(cursor ?? "", to: &cursorText)
        let cursorInner = String(decoding: cursorText.dropFirst().dropLast(), as: UTF8.self)
        let text = json
            .replacingAll("\"{page}\"", with: String(page))
            .replacingAll("{page}", with: String(page))
            .replacingAll("{cursor}", with: cursorInner)
        return Array(text.utf8)
    }
}
