import Foundation

/// Why a walk ended.
package enum StopReason: Sendable, Equatable, CustomStringConvertible {
    case emptyPage(page: Int)
    case knownPage(page: Int)
    case status(Int, page: Int)
    case lastPage(page: Int)
    case total(Int, page: Int)
    case endOfPages(page: Int)
    case noNextPage(page: Int)
    /// The page's `has_more` flag was false or missing.
    case noMore(page: Int)
    /// The page held fewer records than `stop.short`.
    case shortPage(page: Int)
    /// The page held a record stored before (`known: record`).
    case knownRecord(page: Int)
    /// The page's oldest `incremental` value was at or below `{since}` (`known: since`).
    case reachedSince(page: Int)
    case singlePage
    /// A child job walked the children of this many parents.
    case parents(Int)
    case maxPages(Int)
    case failed
    /// A signal stopped the walk.
    case interrupted
    /// The API asked for a longer wait than the job allows (`max_wait`).
    case deferred

    /// A walk that ended on a stop condition or at `pages.to` saw everything (SPEC §5).
    package var isComplete: Bool {
        switch self {
        case .maxPages, .failed, .interrupted, .deferred: return false
        default: return true
        }
    }

    /// The page the walk ended on, when one ended it.
    package var page: Int? {
        switch self {
        case let .emptyPage(page), let .knownPage(page), let .status(_, page), let .lastPage(page), let .total(_, page),
             let .endOfPages(page), let .noNextPage(page), let .noMore(page), let .shortPage(page), let .knownRecord(page),
             let .reachedSince(page):
            return page
        case .singlePage, .parents, .maxPages, .failed, .interrupted, .deferred:
            return nil
        }
    }

    package var description: String {
        switch self {
        case let .emptyPage(page): return "empty page \(page)"
        case let .knownPage(page): return "page \(page) held only known ids"
        case let .status(status, page): return "HTTP \(status) on page \(page)"
        case let .lastPage(page): return "last page \(page) reached"
        case let .total(total, page): return "all \(total) records walked at page \(page)"
        case let .endOfPages(page): return "pages.to reached at page \(page)"
        case let .noNextPage(page): return "no next page after page \(page)"
        case let .noMore(page): return "no more pages after page \(page) (has_more)"
        case let .shortPage(page): return "short page \(page)"
        case let .knownRecord(page): return "page \(page) reached a known record"
        case let .reachedSince(page): return "page \(page) reached {since}"
        case .singlePage: return "single page"
        case let .parents(count): return "children of \(count) \(count == 1 ? "parent" : "parents") walked"
        case let .maxPages(count): return "--max-pages \(count) reached"
        case .failed: return "failed"
        case .interrupted: return "interrupted"
        case .deferred: return "deferred"
        }
    }
}

/// A record the walk could not store.
package struct RejectedRecord: Sendable, Codable, Equatable {
    package let page: Int
    package let index: Int
    package let reason: String

    package init(page: Int, index: Int, reason: String) {
        self.page = page
        self.index = index
        self.reason = reason
    }
}

/// An id listed more than once in one page.
package struct RepeatedID: Sendable, Equatable {
    package let page: Int
    package let id: String
    /// Where it appears in the page's records array.
    package let indexes: [Int]

    package init(page: Int, id: String, indexes: [Int]) {
        self.page = page
        self.id = id
        self.indexes = indexes
    }
}

/// A response that failed a walk: nothing of it was stored.
package struct PageFailure: Sendable, Equatable {
    package let page: Int
    package let method: String
    /// Redacted.
    package let url: String
    package let status: Int?
    /// No credential could be had for the request, so it was never sent.
    package let notSent: Bool
    package let problem: String

    package init(
        page: Int,
        method: String,
        url: String,
        status: Int? = nil,
        notSent: Bool = false,
        problem: String
    ) {
        self.page = page
        self.method = method
        self.url = url
        self.status = status
        self.notSent = notSent
        self.problem = problem
    }

    /// `GET https://…?key=REDACTED: HTTP 200: response is not JSON: …`; `…: not sent: auth 'crm'
    /// (oauth2): the token endpoint …` when no credential could be had for it.
    package var description: String {
        "\(method) \(url): \(notSent ? "not sent" : status.map { "HTTP \($0)" } ?? "no response"): \(problem)"
    }
}

/// The last page a response named (`stop.last_page`).
package struct AnnouncedLastPage: Sendable, Equatable {
    package let page: Int
    package let last: Int

    package init(page: Int, last: Int) {
        self.page = page
        self.last = last
    }
}

/// The count of records in the whole walk that a response named (`stop.total`).
package struct AnnouncedTotal: Sendable, Equatable {
    package let page: Int
    package let total: Int

    package init(page: Int, total: Int) {
        self.page = page
        self.total = total
    }
}

/// A `stop.last_page` or `stop.total` value a response did not give as a whole number.
package struct UnreadableValue: Sendable, Equatable {
    package enum Key: Sendable, Equatable { case lastPage, total, pages, hasMore }

    package let page: Int
    package let key: Key
    package let message: String

    package init(page: Int, key: Key, message: String) {
        self.page = page
        self.key = key
        self.message = message
    }
}

/// A configured path the responses did not hold.
package struct MissingPath: Sendable, Equatable, CustomStringConvertible {
    /// The page it was looked for on; nil when no page of the walk held it.
    package let page: Int?
    package let message: String

    package init(page: Int? = nil, message: String) {
        self.page = page
        self.message = message
    }

    package var description: String { page.map { "page \($0): \(message)" } ?? message }
}

/// What a job's walk did.
package struct WalkResult: Sendable {
    package var stop: StopReason = .failed
    /// Pages walked: fetched, answered 304, or skipped by `refresh_after`.
    package var pages = 0
    /// Pages the server answered 304 Not Modified: replayed from the stored copy.
    package var pagesNotModified = 0
    /// Pages not requested because they were fetched within `refresh_after`.
    package var pagesSkipped = 0
    package var counts = CommitCounts()
    package var rejected: [RejectedRecord] = []
    /// Ids repeated within a page (each stored once).
    package var repeated: [RepeatedID] = []
    /// Every `stop.last_page` value the walk's responses gave.
    package var announcedLast: [AnnouncedLastPage] = []
    /// Every `stop.total` value the walk's responses gave.
    package var announcedTotals: [AnnouncedTotal] = []
    /// Configured `stop` paths a response did not answer with a whole number.
    package var unreadable: [UnreadableValue] = []
    /// Entries of the records arrays walked, rejected ones included; a resumed walk
    /// counts the records stored before it resumed.
    package var elementsWalked = 0
    package var retries = 0
    /// Response bytes received for the pages of this walk.
    package var bytes = 0
    /// The page a resumed walk started at.
    package var resumedAt: Int?
    /// Page values stored, first and last.
    package var firstStored: Int?
    package var lastStored: Int?
    /// Why the walk failed or was stopped; nil when it ended as it should.
    package var error: JobFailure?
    /// Configured paths the API's responses did not hold, where that would end the walk
    /// early or quietly do nothing: a `next` or `has_more` path absent from the first page
    /// of records, a `stop` path no response held, a `downloads` path no record held.
    package var missingPaths: [MissingPath] = []
    /// Other things a run's user should know about what was stored.
    package var warnings: [String] = []

    package init(
        stop: StopReason = .failed,
        pages: Int = 0,
        pagesNotModified: Int = 0,
        pagesSkipped: Int = 0,
        counts: CommitCounts = CommitCounts(),
        rejected: [RejectedRecord] = [],
        repeated: [RepeatedID] = [],
        announcedLast: [AnnouncedLastPage] = [],
        announcedTotals: [AnnouncedTotal] = [],
        unreadable: [UnreadableValue] = [],
        elementsWalked: Int = 0,
        retries: Int = 0,
        bytes: Int = 0,
        resumedAt: Int? = nil,
        firstStored: Int? = nil,
        lastStored: Int? = nil,
        error: JobFailure? = nil,
        missingPaths: [MissingPath] = [],
        warnings: [String] = []
    ) {
        self.stop = stop
        self.pages = pages
        self.pagesNotModified = pagesNotModified
        self.pagesSkipped = pagesSkipped
        self.counts = counts
        self.rejected = rejected
        self.repeated = repeated
        self.announcedLast = announcedLast
        self.announcedTotals = announcedTotals
        self.unreadable = unreadable
        self.elementsWalked = elementsWalked
        self.retries = retries
        self.bytes = bytes
        self.resumedAt = resumedAt
        self.firstStored = firstStored
        self.lastStored = lastStored
        self.error = error
        self.missingPaths = missingPaths
        self.warnings = warnings
    }

    package var pagesFetched: Int { pages - pagesNotModified - pagesSkipped }
}

extension WalkResult {
    package mutating func count(_ served: ServedPage) {
        pages += 1
        elementsWalked += served.elementCount
        bytes += served.responseBytes
        rejected += served.rejected
        repeated += served.repeated
        switch served.origin {
        case .fetched: break
        case .notModified: pagesNotModified += 1
        case .skipped: pagesSkipped += 1
        }
    }
}
