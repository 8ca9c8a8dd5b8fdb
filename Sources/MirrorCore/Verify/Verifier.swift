import Foundation
package import Logging
package import MirrorExport
package import MirrorHTTP
package import MirrorModel
import MirrorWalk
import ServiceLifecycle
import Synchronization

/// One thing wrong with an API's page walk.
package struct WalkFault: Sendable, Equatable, CustomStringConvertible {
    package enum Kind: String, Sendable {
        case badPage = "bad page"
        case missingID = "record without id"
        case repeatedID = "id repeated in a page"
        case drift
        case loop
        case lastPage = "last page"
        case total
        case maxPages = "max pages"
        case hasMore = "has_more"
        case missingPath = "missing path"
    }

    package let kind: Kind
    /// The page involved (the later one, for drift).
    package let page: Int?
    package let message: String

    package var description: String { page.map { "page \($0): \(message)" } ?? message }
}

/// Where `verify` puts pages: nowhere. It remembers which page each id was first seen on,
/// to find ids that drift from one page to another.
///
/// For a job with children (`parent`), it keeps the first `keep` records it is given, whose
/// children are walked next.
final class WalkRecorder: Sendable {
    private let state = Mutex<(firstPages: FirstPages, drift: [WalkFault], kept: [(id: String, record: String)])>((FirstPages(), [], []))
    private let keep: Int

    init(keep: Int = 0) {
        self.keep = keep
    }

    var drift: [WalkFault] { state.withLock { $0.drift } }
    var kept: [(id: String, record: String)] { state.withLock { $0.kept } }

    var store: PageObserver { PageObserver { self.commit($0) } }

    private func commit(_ page: PageCommit) -> CommitCounts {
        state.withLock { state in
            if state.kept.count < keep {
                page.records.forEach { id, json in
                    guard state.kept.count < keep else { return }
                    state.kept.append((String(decoding: id, as: UTF8.self), String(decoding: json, as: UTF8.self)))
                }
            }
            page.records.forEach { id, _ in
                if let first = state.firstPages.note(id, page: page.page) {
                    state.drift.append(WalkFault(kind: .drift, page: page.page,
                                                 message: "id '\(String(decoding: id, as: UTF8.self))' was already on page \(first) (drift)"))
                }
            }
        }
        // Nothing counts as stored before: `stop.known` never ends a verification walk.
        var counts = CommitCounts()
        counts.new = page.records.count
        return counts
    }

}

/// One job's verification.
package struct JobVerification: Sendable {
    package var job: String
    package var file: String
    package var walk: WalkResult
    package var faults: [WalkFault]
    package var seconds: Double

    package var passed: Bool { faults.isEmpty }

    /// `events: ok, 12 pages, 1180 records, ended: empty page 13, 1.20s`, then one line per fault.
    package var lines: [String] {
        let records = walk.counts.new
        let head = passed ? "ok" : "\(faults.count) \(faults.count == 1 ? "fault" : "faults")"
        let ended = walk.error == nil || walk.stop == .interrupted || walk.stop == .deferred ? walk.stop.description : "failed"
        var lines = ["\(job): \(head), \(walk.pages) \(walk.pages == 1 ? "page" : "pages"), \(records) records, ended: \(ended), "
            + String(format: "%.2fs", seconds)]
        lines += faults.map { "  \($0)" }
        return lines
    }
}

/// The result of `mirror verify`.
package struct VerifySummary: Sendable {
    package var jobs: [JobVerification]
    /// The signal that stopped the walks, if one did: the process exits with 128 + it.
    package var signal: Int32?

    package var passed: Bool { jobs.allSatisfy(\.passed) }
    package var text: String { jobs.flatMap(\.lines).joined(separator: "\n") }

    /// JUnit XML: one test suite per job file, one test case per job, its faults in the failure.
    package var junitXML: String {
        func attribute(_ text: String) -> String { Self.escape(text, inAttribute: true) }
        func text(_ text: String) -> String { Self.escape(text, inAttribute: false) }
        func time(_ seconds: Double) -> String { String(format: "%.3f", seconds) }
        var files: [String] = []
        for job in jobs where !files.contains(job.file) { files.append(job.file) }
        let failures = jobs.filter { !$0.passed }.count
        var xml = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        xml += #"<testsuites name="mirror verify" tests="\#(jobs.count)" failures="\#(failures)" errors="0" time="\#(time(jobs.map(\.seconds).reduce(0, +)))">"# + "\n"
        for file in files {
            let cases = jobs.filter { $0.file == file }
            xml += #"  <testsuite name="\#(attribute(file))" tests="\#(cases.count)" failures="\#(cases.filter { !$0.passed }.count)" errors="0" skipped="0" time="\#(time(cases.map(\.seconds).reduce(0, +)))">"# + "\n"
            for job in cases {
                let open = #"    <testcase classname="\#(attribute(file))" name="\#(attribute(job.job))" time="\#(time(job.seconds))""#
                if job.passed {
                    xml += open + "/>\n"
                } else {
                    let count = "\(job.faults.count) page-walk \(job.faults.count == 1 ? "fault" : "faults")"
                    xml += open + ">\n"
                    xml += #"      <failure type="page walk" message="\#(attribute(count + ": " + job.faults[0].description))">"#
                    xml += text(job.faults.map(\.description).joined(separator: "\n"))
                    xml += "</failure>\n    </testcase>\n"
                }
            }
            xml += "  </testsuite>\n"
        }
        xml += "</testsuites>\n"
        return xml
    }

    /// Escapes text for XML 1.0 element content or a double-quoted attribute. Characters
    /// XML 1.0 does not allow at all (control characters other than tab, LF and CR, and
    /// U+FFFE, U+FFFF) become U+FFFD. A parser turns a literal CR into LF, and in an
    /// attribute tab and LF into spaces: those are written as character references.
    static func escape(_ text: String, inAttribute: Bool) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"" where inAttribute: out += "&quot;"
            case "\t", "\n", "\r":
                if inAttribute || scalar == "\r" { out += "&#\(scalar.value);" } else { out.unicodeScalars.append(scalar) }
            case "\u{0}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}": out += "\u{FFFD}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

/// Walks each job's pages exactly as `run` does (paging, stop conditions, retries,
/// validation, concurrency) and reports what is wrong with the walk. Stores nothing and
/// never touches the output folder.
package struct Verifier: Sendable {
    package struct Options: Sendable {
        package var jobs: [String] = []
        package var maxPages: Int?
        /// A child job is walked for this many of its parent's first records; nil: all of them.
        package var maxParents: Int?
        package var parallel = 4
        package var retry = RetryPolicy()
        /// The signals that stop the walks (see `GracefulStop`).
        package var signals = StopSignals.none
        package init() {}
    }

    let client: HTTPClient
    let limiter = RateLimiter()
    /// What each host says of its quota, shared by every walk.
    let quota: QuotaPacer
    let logger: Logger

    package init(client: HTTPClient, logger: Logger) {
        self.client = client
        self.logger = logger
        quota = QuotaPacer(clock: client.clock)
    }

    /// Verifies the selected jobs. Stopped by a signal, it reports the walks as far as they went.
    package func verify(_ files: [JobFile], options: Options) async throws -> VerifySummary {
        var selection = Runner.Options()
        selection.jobs = options.jobs
        let selected = try Runner.select(files, options: selection)
        // A child job's parent is walked first, for its records; one not selected is not reported.
        var entries = selected.map { (job: $0.job, file: $0.file, reported: true) }
        var index = 0
        while index < entries.count {
            let entry = entries[index]
            if let name = entry.job.parent, !entries.contains(where: { $0.file.path == entry.file.path && $0.job.name == name }),
               let parent = entry.file.jobs.first(where: { $0.name == name }) {
                entries.append((parent, entry.file, false))
            }
            index += 1
        }
        let all = entries
        let parents = Mutex<[String: [(id: String, record: String)]]>([:])
        // Nothing is stored, so a stop cuts everything at once.
        let (results, stop) = try await GracefulStop.run(options.signals) {
            await cancelWhenGracefulShutdown {
                await JobScheduler.map(all, width: options.parallel,
                                       after: Runner.parents(all.map { ($0.job, $0.file.path) })) { entry -> JobVerification in
                    let key = { (name: String) in entry.file.path + "\u{0}" + name }
                    let keep = entry.job.children.isEmpty ? 0 : options.maxParents ?? .max
                    let (verification, kept) = if let parent = entry.job.parent {
                        await self.verifyChildren(entry.job, file: entry.file.path, parents: parents.withLock { $0[key(parent)] } ?? [],
                                                  options: options, keep: keep)
                    } else {
                        await self.verify(entry.job, file: entry.file.path, options: options, keep: keep)
                    }
                    parents.withLock { $0[key(entry.job.name)] = kept }
                    return verification
                }
            }
        }
        return VerifySummary(jobs: zip(entries, results).compactMap { $0.0.reported ? $0.1 : nil }, signal: stop?.signal)
    }

    func verify(_ job: JobSpec, file: String, options: Options,
                keep: Int = 0) async -> (JobVerification, [(id: String, record: String)]) {
        let clock = ContinuousClock.now
        let recorder = WalkRecorder(keep: keep)
        // An incremental job is walked from `initial`, as a first run would.
        let job = job.incremental == nil ? job : job.filling("since", with: job.incremental?.initial)
        let start = WalkStart(startedAt: Timestamp.string(Date()), page: nil, nextURL: nil, cursor: nil, position: 0)
        let walk = await PageWalker(job: job, store: recorder.store, client: client, maxPages: options.maxPages, refresh: true,
                                    retry: options.retry, limiter: limiter, quota: quota, logger: logger)
            .walk(from: start)
        let elapsed = ContinuousClock.now - clock
        let seconds = elapsed.seconds
        return (JobVerification(job: job.name, file: file, walk: walk,
                                faults: Self.faults(of: walk, drift: recorder.drift, redactor: job.redactor), seconds: seconds),
                recorder.kept)
    }

    /// Every fault of a walk, in page order. Ids, cursors and error wording come from the
    /// server and may echo a `${…}` value, so every message passes the job's redactor last.
    static func faults(of walk: WalkResult, drift: [WalkFault], redactor: Redactor) -> [WalkFault] {
        var faults: [WalkFault] = []
        for record in walk.rejected {
            faults.append(WalkFault(kind: .missingID, page: record.page, message: record.reason))
        }
        for repeated in walk.repeated {
            faults.append(WalkFault(kind: .repeatedID, page: repeated.page, message:
                "id '\(repeated.id)' appears \(repeated.indexes.count) times (records \(repeated.indexes.map(String.init).joined(separator: ", ")))"))
        }
        faults += drift
        faults += walk.missingPaths.map { WalkFault(kind: .missingPath, page: $0.page, message: $0.message) }
        // A configured `stop` path that does not lead to a whole number (or, `has_more`, to a flag).
        for value in walk.unreadable {
            let kind: WalkFault.Kind
            switch value.key {
            case .total: kind = .total
            case .lastPage, .pages: kind = .lastPage
            case .hasMore: kind = .hasMore
            }
            faults.append(WalkFault(kind: kind, page: value.page, message: value.message))
        }
        // The last page the responses announce: it must not change, and the walk must reach it.
        if let first = walk.announcedLast.first {
            for announced in walk.announcedLast where announced.last != first.last {
                faults.append(WalkFault(kind: .lastPage, page: announced.page, message:
                    "announces last page \(announced.last), page \(first.page) announced \(first.last)"))
            }
            let last = walk.announcedLast.last!.last
            let endedAt: Int?
            switch walk.stop {
            case let .emptyPage(page), let .noNextPage(page), let .status(_, page), let .knownPage(page), let .noMore(page),
                 let .shortPage(page), let .knownRecord(page), let .reachedSince(page):
                endedAt = page
            default: endedAt = nil
            }
            if walk.error == nil, let endedAt, endedAt < last {
                faults.append(WalkFault(kind: .lastPage, page: endedAt, message:
                    "the walk ended here (\(walk.stop)) before the last page \(last) the responses announce"))
            }
        }
        // The total the responses announce: it must not change, and the walk must see that many records.
        if let first = walk.announcedTotals.first {
            for announced in walk.announcedTotals where announced.total != first.total {
                faults.append(WalkFault(kind: .total, page: announced.page, message:
                    "announces \(announced.total) records in all, page \(first.page) announced \(first.total)"))
            }
            let total = walk.announcedTotals.last!.total
            if walk.error == nil, walk.stop.isComplete, walk.elementsWalked != total, let page = walk.stop.page ?? walk.lastStored {
                faults.append(WalkFault(kind: .total, page: page, message:
                    "the walk ended here (\(walk.stop)) with \(walk.elementsWalked) records, not the \(total) the responses announce"))
            }
        }
        faults.sort { ($0.page ?? .max) < ($1.page ?? .max) }
        // What ended the walk early comes last.
        if let loop = walk.error?.loop {
            faults.append(WalkFault(kind: .loop, page: walk.lastStored, message: "loop: \(loop); the walk stopped"))
        } else if let failure = walk.error?.page {
            faults.append(WalkFault(kind: .badPage, page: failure.page, message: failure.description))
        } else if let failure = walk.error?.deferredPage {
            // The API asked for a longer wait than `max_wait`: the pages from it on were not verified.
            faults.append(WalkFault(kind: .badPage, page: failure.page, message: "\(failure.method) \(failure.url): "
                + "\(failure.status.map { "HTTP \($0)" } ?? "not sent"): \(failure.problem); the walk stopped here"))
        } else if let error = walk.error {
            faults.append(WalkFault(kind: .badPage, page: nil, message: error.walkedDescription))
        }
        if case let .maxPages(cap) = walk.stop {
            faults.append(WalkFault(kind: .maxPages, page: walk.lastStored, message:
                "the walk was cut by --max-pages \(cap): the pages after it were not verified"))
        }
        return faults.map { WalkFault(kind: $0.kind, page: $0.page, message: redactor.redact($0.message)) }
    }
}
