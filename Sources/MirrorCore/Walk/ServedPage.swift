/// A problem with one response: the page is not stored.
struct PageFault: Error, Sendable {
    let url: RedactedURL
    let status: Int?
    let problem: String
}

/// What a request for a page came to.
enum Fetched: Sendable {
    /// A status listed in `stop.status`.
    case stopStatus(Int)
    case page(ServedPage)
}

/// A request's final result, and the retries it took.
struct FetchOutcome: Sendable {
    var result: Result<Fetched, PageFault>
    var retries: Int
}

/// Where a response says the walk goes next.
enum NextTarget: Equatable, Sendable {
    case none
    case url(String)
    case cursor(String)
}

/// One page as the walk sees it: parsed from a response, or replayed from the stored
/// copy (a 304, or a page within `refresh_after`).
struct ServedPage: Sendable {
    enum Origin: Sendable, CustomStringConvertible {
        case fetched, notModified, skipped
        var description: String {
            switch self {
            case .fetched: return "fetched"
            case .notModified: return "not modified"
            case .skipped: return "skipped (refresh_after)"
            }
        }
    }

    enum Content: Sendable {
        /// The compacted response's records, and the response without them.
        case fresh(PageRecords, envelope: PageEnvelope)
        case stored(StoredPage)
    }

    let origin: Origin
    let content: Content
    let requestBody: String
    let status: Int
    let etag: String?
    let lastModified: String?
    let responseBytes: Int
    let elementCount: Int
    let recordCount: Int
    let rejected: [RejectedRecord]
    let repeated: [RepeatedID]
    /// URLs of the files the page's records point to.
    let files: [RedactedURL]
    let next: NextTarget
    let lastPage: Int?
    let total: Int?
    /// The response's `stop.has_more` flag; nil when not configured, or for a stored
    /// copy (the flag is not kept: the walk goes on as its next cursor or page says).
    var hasMore: Bool? = nil
    /// The next cursor was a JSON number: a body sends it back as one.
    var cursorIsNumber = false
    /// The `next` and `has_more` paths this response lacks, as messages; empty for a stored copy.
    var absent: [String] = []
    /// The `stop` paths (`last_page`, `pages`, `total`) this response holds.
    var stopPathsFound: Set<String> = []
    /// Indexes into `downloads` of the paths some stored record of the page holds.
    var downloadsFound: Set<Int> = []
    /// Configured `stop` paths this response did not answer with a whole number.
    let unreadable: [(key: UnreadableValue.Key, message: String)]
    /// Ids of the records marked deleted (`deleted`); none for a stored copy.
    var deleted: [String] = []
    /// The highest value of the `incremental` path among the page's records.
    var highest: SinceValue? = nil
    /// The lowest one: `stop.known: since` ends the walk at a page where it is at or below `{since}`.
    var lowest: SinceValue? = nil
}

extension ServedPage {
    /// The stored copy served again. Its next target was stored with its secrets as
    /// `${NAME}` (or masked, and then it is not replayable).
    init(_ stored: StoredPage, origin: Origin, etag: String?, lastModified: String?, redactor: Redactor) {
        let next: NextTarget
        if let url = stored.nextURL {
            next = .url(redactor.expand(url))
        } else if let cursor = stored.nextCursor {
            next = .cursor(redactor.expand(cursor))
        } else {
            next = .none
        }
        self.init(origin: origin, content: .stored(stored), requestBody: stored.requestBody, status: stored.status,
                  etag: etag, lastModified: lastModified, responseBytes: 0, elementCount: stored.elements,
                  recordCount: stored.ids.count, rejected: [], repeated: [], files: [], next: next,
                  lastPage: stored.lastPage, total: stored.total, cursorIsNumber: stored.nextCursorIsNumber, unreadable: [])
    }
}
