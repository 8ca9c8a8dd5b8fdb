import Foundation

/// One page of records ready to be stored, with the walk's checkpoint after it.
package struct PageCommit: Sendable {
    package var job: String
    package var account: String
    package var table: String
    package var url: RedactedURL
    /// The request body as shown (secrets masked); empty for GET.
    package var requestBody: String
    package var page: Int
    package var status: Int
    package var etag: String?
    package var lastModified: String?
    package var responseBytes: Int
    package var records: PageRecords
    /// The response without its records, kept for `mirror serve`.
    package var envelope: PageEnvelope? = nil
    /// Entries of the response's records array, stored ones and rejected ones.
    package var elements: Int
    /// The response's `stop.last_page` value.
    package var lastPage: Int?
    /// The response's `stop.total` value.
    package var total: Int?
    /// The response's `stop.has_more` flag.
    package var hasMore: Bool?
    /// URLs of files the records point to (`downloads`), registered with the page.
    package var files: [RedactedURL] = []
    package var onChange: JobSpec.OnChange
    /// The table is shared with other jobs (`share_table`): the page's ids are noted as this job's.
    package var shared = false
    /// Position of the first record: the walk's running count.
    package var firstPosition: Int
    /// Where the walk goes after this page.
    package var nextPage: Int?
    /// Redacted: a checkpoint holding a secret cannot be resumed from.
    package var nextURL: String?
    package var nextCursor: String?
    /// The next cursor was a JSON number.
    package var nextCursorIsNumber = false
    package var time: String
    /// Ids of the page's records marked deleted (`deleted`): removed from the table.
    package var deleted: [String] = []
    /// The highest value of the job's `incremental` path among the page's records.
    package var highWater: HighWater? = nil
    /// A child job's page: the id of the parent record it was walked for. Its records
    /// carry it; the walk has no checkpoint (a failed parent is walked again whole).
    package var parentID: String? = nil
    /// The jobs whose parent this job is: the page's new and changed records are queued
    /// for them in `_mirror_parents`.
    package var children: [String] = []
    /// The records whose values the job's typed columns make NULL: counted for those written.
    package var mismatches = ColumnMismatches()

    package init(
        job: String,
        account: String,
        table: String,
        url: RedactedURL,
        requestBody: String,
        page: Int,
        status: Int,
        etag: String? = nil,
        lastModified: String? = nil,
        responseBytes: Int,
        records: PageRecords,
        envelope: PageEnvelope? = nil,
        elements: Int,
        lastPage: Int? = nil,
        total: Int? = nil,
        hasMore: Bool? = nil,
        files: [RedactedURL] = [],
        onChange: JobSpec.OnChange,
        shared: Bool = false,
        firstPosition: Int,
        nextPage: Int? = nil,
        nextURL: String? = nil,
        nextCursor: String? = nil,
        nextCursorIsNumber: Bool = false,
        time: String,
        deleted: [String] = [],
        highWater: HighWater? = nil,
        parentID: String? = nil,
        children: [String] = [],
        mismatches: ColumnMismatches = ColumnMismatches()
    ) {
        self.job = job
        self.account = account
        self.table = table
        self.url = url
        self.requestBody = requestBody
        self.page = page
        self.status = status
        self.etag = etag
        self.lastModified = lastModified
        self.responseBytes = responseBytes
        self.records = records
        self.envelope = envelope
        self.elements = elements
        self.lastPage = lastPage
        self.total = total
        self.hasMore = hasMore
        self.files = files
        self.onChange = onChange
        self.shared = shared
        self.firstPosition = firstPosition
        self.nextPage = nextPage
        self.nextURL = nextURL
        self.nextCursor = nextCursor
        self.nextCursorIsNumber = nextCursorIsNumber
        self.time = time
        self.deleted = deleted
        self.highWater = highWater
        self.parentID = parentID
        self.children = children
        self.mismatches = mismatches
    }
}

/// The empty page that ended a walk: kept for `mirror serve` with no ids, so a walk never
/// replays it (whether a walk ends there is asked again each run).
package struct EndPage: Sendable {
    package var job: String
    package var account: String
    package var table: String
    package var url: RedactedURL
    package var requestBody: String
    package var page: Int
    package var status: Int
    package var responseBytes: Int
    package var envelope: PageEnvelope
    package var time: String

    package init(
        job: String,
        account: String,
        table: String,
        url: RedactedURL,
        requestBody: String,
        page: Int,
        status: Int,
        responseBytes: Int,
        envelope: PageEnvelope,
        time: String
    ) {
        self.job = job
        self.account = account
        self.table = table
        self.url = url
        self.requestBody = requestBody
        self.page = page
        self.status = status
        self.responseBytes = responseBytes
        self.envelope = envelope
        self.time = time
    }
}

/// The highest value of an `incremental` path seen in a page.
package struct HighWater: Sendable {
    package var value: SinceValue

    package init(value: SinceValue) {
        self.value = value
    }
}

/// A page served again from what was stored: a 304 answer, or a page within
/// `refresh_after`. Its records are seen again; nothing of them is rewritten.
package struct PageReplay: Sendable {
    package var job: String
    package var account: String
    package var table: String
    package var stored: StoredPage
    package var firstPosition: Int
    /// A 304 refreshes the page's fetch time and validators; a skipped page keeps them.
    package var revalidated: (etag: String?, lastModified: String?)?
    package var nextPage: Int?
    package var nextURL: String?
    package var nextCursor: String?
    package var nextCursorIsNumber = false
    package var time: String
    /// A child job's page: the walk has no checkpoint.
    package var child = false

    package init(
        job: String,
        account: String,
        table: String,
        stored: StoredPage,
        firstPosition: Int,
        revalidated: (etag: String?, lastModified: String?)? = nil,
        nextPage: Int? = nil,
        nextURL: String? = nil,
        nextCursor: String? = nil,
        nextCursorIsNumber: Bool = false,
        time: String,
        child: Bool = false
    ) {
        self.job = job
        self.account = account
        self.table = table
        self.stored = stored
        self.firstPosition = firstPosition
        self.revalidated = revalidated
        self.nextPage = nextPage
        self.nextURL = nextURL
        self.nextCursor = nextCursor
        self.nextCursorIsNumber = nextCursorIsNumber
        self.time = time
        self.child = child
    }
}

/// A page as `_mirror_pages` keeps it: enough to walk past it without its body.
package struct StoredPage: Sendable, Equatable {
    package var url: String
    package var requestBody: String
    package var page: Int
    package var status: Int
    package var etag: String?
    package var lastModified: String?
    package var fetchedAt: String
    package var elements: Int
    package var ids: [String]
    /// As stored: redacted, so one holding a mask cannot be followed.
    package var nextURL: String?
    package var nextCursor: String?
    /// The next cursor was a JSON number.
    package var nextCursorIsNumber = false
    package var lastPage: Int?
    package var total: Int?
    /// The page's `stop.has_more` flag; nil when the job has none, or for a page stored
    /// before the flag was kept.
    package var hasMore: Bool?

    package init(
        url: String,
        requestBody: String,
        page: Int,
        status: Int,
        etag: String? = nil,
        lastModified: String? = nil,
        fetchedAt: String,
        elements: Int,
        ids: [String],
        nextURL: String? = nil,
        nextCursor: String? = nil,
        nextCursorIsNumber: Bool = false,
        lastPage: Int? = nil,
        total: Int? = nil,
        hasMore: Bool? = nil
    ) {
        self.url = url
        self.requestBody = requestBody
        self.page = page
        self.status = status
        self.etag = etag
        self.lastModified = lastModified
        self.fetchedAt = fetchedAt
        self.elements = elements
        self.ids = ids
        self.nextURL = nextURL
        self.nextCursor = nextCursor
        self.nextCursorIsNumber = nextCursorIsNumber
        self.lastPage = lastPage
        self.total = total
        self.hasMore = hasMore
    }

    /// Whether the walk can go on from this copy alone.
    package var isReplayable: Bool {
        !(nextURL?.contains(Redactor.mask) ?? false) && !(nextCursor?.contains(Redactor.mask) ?? false)
    }
}

/// A replayed page whose records are no longer all stored: it must be fetched whole.
package struct ReplayMissingRecords: Error, Sendable {
    package let missing: Int

    package init(missing: Int) {
        self.missing = missing
    }
}

/// Where a job's walk starts: page `from` of a new walk, or the checkpoint of one that
/// failed or was killed.
package struct WalkStart: Sendable, Equatable {
    package var startedAt: String
    /// The `{page}` value to fetch next; nil for a new walk.
    package var page: Int?
    package var nextURL: String?
    package var cursor: String?
    package var position: Int
    /// The cursor was a JSON number.
    package var cursorIsNumber = false
    /// Whether the job has stored pages that a request may find (a copy to replay or to
    /// revalidate): a first walk has none, and looks up none.
    package var storedPages = true

    package init(
        startedAt: String,
        page: Int? = nil,
        nextURL: String? = nil,
        cursor: String? = nil,
        position: Int,
        cursorIsNumber: Bool = false,
        storedPages: Bool = true
    ) {
        self.startedAt = startedAt
        self.page = page
        self.nextURL = nextURL
        self.cursor = cursor
        self.position = position
        self.cursorIsNumber = cursorIsNumber
        self.storedPages = storedPages
    }

    package var isResumed: Bool { page != nil }

    /// A redacted URL or cursor cannot be requested again.
    package var isResumable: Bool {
        !(nextURL?.contains(Redactor.mask) ?? false) && !(cursor?.contains(Redactor.mask) ?? false)
    }
}

package struct CommitCounts: Sendable, Equatable {
    package var new = 0
    package var updated = 0
    package var unchanged = 0
    /// Records removed because the page marked them deleted.
    package var deleted = 0
    /// A child job's records that were another parent's (a child table keeps one row per
    /// id): how many, and the first, said in words.
    package var movedChildren = 0
    package var firstMovedChild: String?
    /// Files of the page not downloaded yet (or whose download is gone from disk).
    package var pendingFiles: [RedactedURL] = []
    /// Records written (new or changed) whose value a typed column makes NULL, by typed
    /// column in the job's order (see `ColumnTypes`); shorter when the last have none.
    package var mismatches: [Int] = []
    package init() {}

    /// Adds `other`'s mismatches to these.
    package mutating func addMismatches(_ other: [Int]) {
        if mismatches.count < other.count { mismatches += Array(repeating: 0, count: other.count - mismatches.count) }
        for (index, count) in other.enumerated() { mismatches[index] += count }
    }
}

/// A page a walk stores with others in one commit: fetched, or a stored copy seen again.
package enum PageWrite: Sendable {
    case fresh(PageCommit)
    case replay(PageReplay)
}

/// What storing several pages in order came to: the counts of the first pages, which were
/// stored, and why the page after them was not, when one was not (then none after it was):
/// it could not be stored (`failure`), or it was a replay some of whose records are gone
/// (`missingRecords`, how many), to be fetched again whole.
package struct PagesCommitted: Sendable, Equatable {
    package var stored: [CommitCounts] = []
    package var failure: String?
    package var missingRecords: Int?
    package init(stored: [CommitCounts] = [], failure: String? = nil, missingRecords: Int? = nil) {
        self.stored = stored
        self.failure = failure
        self.missingRecords = missingRecords
    }
}

/// Where a walk puts its pages: the SQLite file of a run, or nowhere (`verify`).
package protocol PageStore: Sendable {
    /// Stores a page's records with the walk's checkpoint, atomically.
    func commit(_ page: PageCommit) async throws -> CommitCounts
    /// Stores pages in order, each as `commit(_:)` or `replay(_:)` would, until one cannot be stored.
    func commit(_ pages: [PageWrite]) async -> PagesCommitted
    /// Sees a stored page's records again; throws `ReplayMissingRecords` if some are gone.
    func replay(_ replay: PageReplay) async throws -> CommitCounts
    /// The stored copy of a request's page, if there is one to replay.
    func storedPage(job: String, account: String, url: String, requestBody: String) async throws -> StoredPage?
    /// Keeps the empty page that ended a walk, for `mirror serve`.
    func keepEndPage(_ page: EndPage) async throws
}

extension PageStore {
    package func commit(_ pages: [PageWrite]) async -> PagesCommitted {
        var committed = PagesCommitted()
        for page in pages {
            do {
                switch page {
                case let .fresh(page): committed.stored.append(try await commit(page))
                case let .replay(replay): committed.stored.append(try await self.replay(replay))
                }
            } catch let missing as ReplayMissingRecords {
                committed.missingRecords = missing.missing
                break
            } catch {
                committed.failure = "\(error)"
                break
            }
        }
        return committed
    }
}

/// A store that keeps no page: each page a walk commits is handed to `observe`, which
/// says what it counts; nothing is stored before, so nothing is replayed and no end page
/// is kept. `verify` and `init` walk with one.
package struct PageObserver: PageStore {
    private let observe: @Sendable (PageCommit) -> CommitCounts

    package init(_ observe: @escaping @Sendable (PageCommit) -> CommitCounts) {
        self.observe = observe
    }

    package func commit(_ page: PageCommit) async throws -> CommitCounts { observe(page) }

    package func replay(_ replay: PageReplay) async throws -> CommitCounts { CommitCounts() }

    package func storedPage(job: String, account: String, url: String, requestBody: String) async throws -> StoredPage? { nil }

    package func keepEndPage(_ page: EndPage) async throws {}
}
