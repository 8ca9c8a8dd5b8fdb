import Foundation
package import Logging
package import MirrorHTTP
import MirrorJobFile
import MirrorModel
import MirrorWalk
import Synchronization

/// Where the confirming walk puts its pages: nowhere. It keeps each page's ids in walk order.
final class IDRecorder: Sendable {
    private let pages = Mutex<[[String]]>([])

    var ids: [[String]] { pages.withLock { $0 } }

    var store: PageObserver {
        PageObserver { page in
            let ids = page.records.ids
            self.pages.withLock { $0.append(ids) }
            var counts = CommitCounts()
            counts.new = ids.count
            return counts
        }
    }
}

/// `mirror init URL`: asks the API for its first page, proposes the job that walks it
/// (`JobProposal`), and confirms the paging by walking two pages as `mirror run` would,
/// with the job the file will hold: page 2 must bring new ids.
package struct JobInitializer: Sendable {
    package let client: HTTPClient
    package let logger: Logger
    package let environment: [String: String]

    package init(client: HTTPClient, logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.client = client
        self.logger = logger
        self.environment = environment
    }

    /// Proposes the job for `url` and writes it to `out` (default `jobs/NAME.yaml`), which
    /// must not exist unless `force`; `authFile` holds an `auth:` block; `graphQL` is the
    /// query POSTed to `url`.
    package func write(url: String, out: String?, name: String?, authFile: String?, graphQL: GraphQLQuery? = nil,
                       force: Bool) async throws -> (path: String, proposal: JobProposal) {
        let path = out ?? "jobs/\(name ?? JobProposal.name(fromURL: url)).yaml"
        if !force, FileManager.default.fileExists(atPath: path) {
            throw InitFailure.exists("\(path) exists: give another --out, or --force to overwrite it")
        }
        let auth = try authFile.map(Self.authBlock(in:))
        let (proposal, text) = try await propose(url: url, name: name, auth: auth, path: path, authFile: authFile, graphQL: graphQL)
        do {
            let folder = (path as NSString).deletingLastPathComponent
            if !folder.isEmpty { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw InitFailure.failed("cannot write \(path): \(JobFileLoader.reason(error))")
        }
        return (path, proposal)
    }

    /// The value of the top-level `auth:` key of a YAML file, as written there: the rest of
    /// its line and the indented lines below it.
    static func authBlock(in file: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
            throw UsageError("cannot read the auth file \(file)")
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("auth:") }) else {
            throw UsageError("\(file) holds no top-level `auth:` key: write the auth block as README's kinds show it")
        }
        lines = Array(lines[start...])
        var block = [String(lines[0].dropFirst("auth:".count).drop { $0 == " " })]
        for line in lines.dropFirst() {
            guard line.isEmpty || line.first == " " || line.first == "#" else { break }
            block.append(line)
        }
        return block.joined(separator: "\n")
    }

    /// The confirmed proposal and the job file's text. `auth` is the text of an `auth:`
    /// value, `${NAME}` in it expanded for these requests only; `path` names the file in messages.
    /// With `graphQL`, the first request POSTs the query, its cursor variable left out.
    package func propose(url: String, name: String?, auth: String?, path: String, authFile: String? = nil,
                         graphQL: GraphQLQuery? = nil) async throws -> (proposal: JobProposal, text: String) {
        guard HTTPClient.isHTTP(url) else {
            throw UsageError("'\(url)' is not an http or https URL")
        }
        let name = name ?? JobProposal.name(fromURL: url)
        let loader = JobFileLoader(environment: environment)
        // The job as its first request needs it: its auth, read as the file will be read.
        var bare = JobProposal(name: name, table: JobProposal.tableName(name), url: url, records: .init(path: ".", why: ""),
                               id: .init(path: "id", why: ""), paging: .single, pagingWhy: "", firstPageCount: 0)
        if let graphQL {
            // A body sending `{cursor}` needs a `next` giving one to load: any path serves the
            // first request, which leaves the cursor out.
            bare.method = "POST"
            bare.body = graphQL.body
            bare.paging = .cursor(path: "data", parameter: graphQL.cursorVariable, hasMore: nil)
        }
        let probe: JobSpec
        do {
            probe = try loader.parse(text: bare.yaml(auth: auth), path: path, folder: ".").jobs[0]
        } catch {
            // The job's own keys are init's: what is wrong is in the auth block.
            throw UsageError(error.diagnostics.map { "\(authFile ?? path): \($0.message)" }.joined(separator: "\n")
                + "; no job written")
        }
        let request = HTTPRequest(method: probe.method.rawValue, url: probe.requestURL(page: probe.pages.from, cursor: nil),
                                  headers: probe.headers, body: probe.body?.render(page: probe.pages.from, cursor: nil), timeout: probe.timeout, maxBytes: probe.maxPageSize, redactor: probe.redactor,
                                  auth: probe.auth)
        let response: HTTPResponse
        do {
            response = try await client.send(request)
        } catch {
            throw InitFailure.failed(probe.redactor.redact("\(request.method) \(request.url): \(error); no job written"))
        }
        guard (200..<300).contains(response.status) else {
            // What the server said, on one line, unless it is a web page.
            let text = String(decoding: response.body.prefix(200), as: UTF8.self)
            let said = text.hasPrefix("<") ? "" : text.split(whereSeparator: \.isNewline).joined(separator: " ")
            throw InitFailure.failed(probe.redactor.redact("\(request.method) \(request.url): HTTP \(response.status)"
                + (said.isEmpty ? "" : ": \(said)") + "; no job written"))
        }
        let proposals: [JobProposal]
        do {
            proposals = try JobProposal.detect(url: url, status: response.status, headers: response.headers, body: response.body,
                                               name: name, graphQL: graphQL)
        } catch {
            throw InitFailure.undecidable(probe.redactor.redact(error.description))
        }
        var failures: [String] = []
        for var proposal in proposals {
            let job = try loader.parse(text: proposal.yaml(auth: auth), path: path, folder: ".").jobs[0]
            if case .single = proposal.paging { return (proposal, proposal.yaml(auth: auth)) }
            switch await confirm(job, paging: proposal.paging) {
            case let .success(confirmation):
                proposal.confirmation = confirmation.description
                if !confirmation.confirmed || confirmation.remarkable { proposal.notes.append(confirmation.description) }
                return (proposal, proposal.yaml(auth: auth))
            case let .failure(problem):
                failures.append(job.redactor.redact(problem.description))
            }
        }
        throw InitFailure.undecidable(failures.count == 1 ? failures[0] + "; no job written"
            : "no way to page was confirmed: " + failures.joined(separator: "; ") + "; no job written")
    }

    /// Walks the job's first two pages; what page 2 brought, or why the paging is wrong.
    private func confirm(_ job: JobSpec, paging: JobProposal.Paging) async -> Result<Confirmation, Problem> {
        let recorder = IDRecorder()
        let start = WalkStart(startedAt: Timestamp.string(Date()), page: nil, nextURL: nil, cursor: nil, position: 0)
        let walk = await PageWalker(job: job, store: recorder.store, client: client, maxPages: 2, refresh: true, retry: RetryPolicy(),
                                    limiter: RateLimiter(), quota: QuotaPacer(clock: client.clock), logger: logger)
            .walk(from: start)
        let pages = recorder.ids
        let what = Self.what(paging)
        if let error = walk.error {
            return .failure(Problem("\(what): \(error.walkedDescription)"))
        }
        if let repeated = walk.repeated.first {
            return .failure(Problem("\(what): id '\(repeated.id)' repeats within page \(repeated.page)"))
        }
        guard pages.count >= 2 else {
            return .success(Confirmation(description: "page 2 not confirmed: \(walk.stop)", confirmed: false))
        }
        let first = Set(pages[0])
        let again = pages[1].filter(first.contains)
        if !pages[1].isEmpty, again.count == pages[1].count {
            return .failure(Problem("\(what): page 2 repeats page 1's \(pages[1].count) ids: the API does not page this way"))
        }
        let new = pages[1].count - again.count
        if let id = again.first {
            // Records added at the head while it walks shift the pages: some ids come again.
            return .success(Confirmation(description: "page 2 confirmed: \(new) new ids; \(again.count) of page 1's came again ('\(id)'"
                + (again.count > 1 ? "…" : "") + "): the pages overlap, as when records are added while it walks; each id is stored once",
                confirmed: true, remarkable: true))
        }
        return .success(Confirmation(description: "page 2 confirmed: \(new) new ids", confirmed: true))
    }

    /// Which paging the walk tried, in words.
    private static func what(_ paging: JobProposal.Paging) -> String {
        switch paging {
        case .single: "one request"
        case let .nextURL(path): "paging by the next URL in `\(path)`"
        case .link: "paging by the Link header"
        case let .cursor(path, parameter, _): "paging by the cursor in `\(path)` sent as `\(parameter)`"
        case let .numbers(parameter, _, _, _): "paging by `\(parameter)` numbers"
        }
    }

    /// What the walk of two pages showed: page 2's new ids, or why there was no page 2.
    struct Confirmation {
        let description: String
        let confirmed: Bool
        /// Said on stderr and atop the file too: page 2 was not all new.
        var remarkable = false
    }

    struct Problem: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
