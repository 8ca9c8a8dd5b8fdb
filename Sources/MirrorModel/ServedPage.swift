/// Where a response says the walk goes next.
package enum NextTarget: Equatable, Sendable {
    case none
    case url(String)
    case cursor(String)
}

/// One page as the walk sees it: parsed from a response, or replayed from the stored
/// copy (a 304, or a page within `refresh_after`).
package struct ServedPage: Sendable {
    package enum Origin: Sendable, CustomStringConvertible {
        case fetched, notModified, skipped
        package var description: String {
            switch self {
            case .fetched: return "fetched"
            case .notModified: return "not modified"
            case .skipped: return "skipped (refresh_after)"
            }
        }
    }

    package enum Content: Sendable {
        /// The compacted response's records, and the response without them.
        case fresh(PageRecords, envelope: PageEnvelope)
        case stored(StoredPage)
    }

    package let origin: Origin
    package let content: Content
    package let requestBody: String
    package let status: Int
    package let etag: String?
    package let lastModified: String?
    package let responseBytes: Int
    package let elementCount: Int
    package let recordCount: Int
    package let rejected: [RejectedRecord]
    package let repeated: [RepeatedID]
    /// URLs of the files the page's records point to.
    package let files: [RedactedURL]
    package let next: NextTarget
    package let lastPage: Int?
    package let total: Int?
    /// The response's `stop.has_more` flag, a stored copy's as it was kept; nil when not
    /// configured, or for a copy stored before the flag was kept.
    package var hasMore: Bool? = nil
    /// The next cursor was a JSON number: a body sends it back as one.
    package var cursorIsNumber = false
    /// The `next` and `has_more` paths this response lacks, as messages; empty for a stored copy.
    package var absent: [String] = []
    /// The `stop` paths (`last_page`, `pages`, `total`) this response holds.
    package var stopPathsFound: Set<String> = []
    /// Indexes into `downloads` of the paths some stored record of the page holds.
    package var downloadsFound: Set<Int> = []
    /// Configured `stop` paths this response did not answer with a whole number.
    package let unreadable: [(key: UnreadableValue.Key, message: String)]
    /// Ids of the records marked deleted (`deleted`); none for a stored copy.
    package var deleted: [String] = []
    /// The highest value of the `incremental` path among the page's records.
    package var highest: SinceValue? = nil
    /// The lowest one: `stop.known: since` ends the walk at a page where it is at or below `{since}`.
    package var lowest: SinceValue? = nil
    /// What a user should know about the page, though it is served (GraphQL errors beside
    /// data); none for a stored copy.
    package var warnings: [String] = []
    /// The fresh records whose values the job's typed columns make NULL.
    package var mismatches = ColumnMismatches()

    package init(
        origin: Origin,
        content: Content,
        requestBody: String,
        status: Int,
        etag: String? = nil,
        lastModified: String? = nil,
        responseBytes: Int,
        elementCount: Int,
        recordCount: Int,
        rejected: [RejectedRecord],
        repeated: [RepeatedID],
        files: [RedactedURL],
        next: NextTarget,
        lastPage: Int? = nil,
        total: Int? = nil,
        hasMore: Bool? = nil,
        cursorIsNumber: Bool = false,
        absent: [String] = [],
        stopPathsFound: Set<String> = [],
        downloadsFound: Set<Int> = [],
        unreadable: [(key: UnreadableValue.Key, message: String)],
        deleted: [String] = [],
        highest: SinceValue? = nil,
        lowest: SinceValue? = nil,
        warnings: [String] = [],
        mismatches: ColumnMismatches = ColumnMismatches()
    ) {
        self.origin = origin
        self.content = content
        self.requestBody = requestBody
        self.status = status
        self.etag = etag
        self.lastModified = lastModified
        self.responseBytes = responseBytes
        self.elementCount = elementCount
        self.recordCount = recordCount
        self.rejected = rejected
        self.repeated = repeated
        self.files = files
        self.next = next
        self.lastPage = lastPage
        self.total = total
        self.hasMore = hasMore
        self.cursorIsNumber = cursorIsNumber
        self.absent = absent
        self.stopPathsFound = stopPathsFound
        self.downloadsFound = downloadsFound
        self.unreadable = unreadable
        self.deleted = deleted
        self.highest = highest
        self.lowest = lowest
        self.warnings = warnings
        self.mismatches = mismatches
    }
}

extension ServedPage {
    /// The stored copy served again. Its next target was stored with its secrets as
    /// `${NAME}` (or masked, and then it is not replayable).
    package init(_ stored: StoredPage, origin: Origin, etag: String?, lastModified: String?, redactor: Redactor) {
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
                  lastPage: stored.lastPage, total: stored.total, hasMore: stored.hasMore, cursorIsNumber: stored.nextCursorIsNumber, unreadable: [])
    }
}
