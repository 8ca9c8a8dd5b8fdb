import Foundation
import MirrorHTTP
import MirrorJSON
import MirrorModel

/// Gets one page: from the stored copy when `refresh_after` says it is fresh enough, else
/// from the API (with the stored copy's validators, so that a 304 replays it), read into
/// records. Nothing is stored here.
struct PageFetcher: Sendable {
    package let job: JobSpec
    package let store: any PageStore
    package let client: HTTPClient
    package let sender: RetryingSender
    /// Ignore `refresh_after` and send no validators: every page is fetched whole.
    package let refresh: Bool
    /// The job's own origin: pages on another get no secret (see `JobSpec.origin`).
    package let origin: Origin?
    /// Whether the store may hold a copy of a page (see `WalkStart.storedPages`): when
    /// it holds none, none is looked up.
    package var storedCopies = true

    /// Requests one page of `target` (retrying as the job says) and reads it. Unless the
    /// target asks for the page whole, a page fetched within `refresh_after` is not
    /// requested, and the stored validators are sent so that a 304 replays the stored copy.
    /// The response bytes of pages ahead of the one stored next are counted in `budget`.
    package func fetch(_ target: PageTarget, budget: PageBudget? = nil) async -> FetchOutcome {
        // Every page of a scroll walk has the same request, and pages told apart by a header
        // share their URL and body: no stored copy stands for one of them.
        let url = target.url, page = target.page, cursor = target.cursor?.text
        let replay = !target.whole && job.next?.isScroll != true && !job.headersCarryPaging
        let body = job.body?.render(page: page, cursor: cursor, cursorIsNumber: target.cursorIsNumber)
        var shownBody = body.map { job.redactor.redact(String(decoding: $0, as: UTF8.self)) } ?? ""
        if let template = job.body, template.form {
            // Form-encoded, a secret is no longer its own text: the masked template is rendered instead.
            shownBody = job.redactor.redact(String(decoding: template.render(
                page: page, cursor: cursor.map(job.redactor.redact), cursorIsNumber: target.cursorIsNumber, shown: true),
                as: UTF8.self))
        }
        var stored: StoredPage?
        if replay, !refresh, storedCopies, let copy = try? await store.storedPage(job: job.name, account: job.account, url: url.description,
                                                              requestBody: shownBody),
           copy.isReplayable, (200..<300).contains(copy.status) {
            stored = copy
        }
        if let stored, let refreshAfter = job.refreshAfter,
           stored.fetchedAt > Timestamp.string(Date().addingTimeInterval(-refreshAfter)) {
            return FetchOutcome(result: .success(.page(ServedPage(stored, origin: .skipped, etag: nil, lastModified: nil,
                                                                         redactor: job.redactor))),
                                retries: 0)
        }
        if let cursor, cursor.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }),
           job.headers.contains(where: { $0.value.real.contains("{cursor}") }) {
            return FetchOutcome(result: .failure(PageFault(url: url, status: nil, problem:
                "the cursor holds a control character: it cannot be sent in a header")), retries: 0)
        }
        var headers = job.headers.map { header in
            guard header.value.real.contains("{page}") || header.value.real.contains("{cursor}") else { return header }
            let value = header.value.real.replacingAll("{page}", with: String(page)).replacingAll("{cursor}", with: cursor ?? "")
            return Header(name: header.name, value: RedactedText(real: value, redactor: job.redactor))
        }
        if origin?.admits(url.real) != true {
            // A next link to another host: what holds a secret stays with the job's own host.
            headers = headers.filter { !$0.value.holdsSecret }
            if let body, job.body?.holdsSecret == true || job.redactor.holdsSecret(String(decoding: body, as: UTF8.self)) {
                return FetchOutcome(result: .failure(PageFault(url: url, status: nil, problem:
                    "a request body holding a secret is not sent to another host than the job's")), retries: 0)
            }
        }
        // Validators are stored with any secret in them written as `${NAME}`.
        if let etag = stored?.etag {
            headers.append(Header(name: "If-None-Match", value: RedactedText(real: job.redactor.expand(etag), redactor: job.redactor)))
        }
        if let lastModified = stored?.lastModified {
            headers.append(Header(name: "If-Modified-Since",
                                  value: RedactedText(real: job.redactor.expand(lastModified), redactor: job.redactor)))
        }
        // The job's credential goes to its own origin only, as its secret headers do.
        var request = HTTPRequest(method: job.method.rawValue, url: url, headers: headers, body: body,
                                  timeout: job.timeout, maxBytes: job.maxPageSize, redactor: job.redactor,
                                  auth: origin?.admits(url.real) == true ? job.auth : nil)
        request.propagateTrace = job.propagateTrace
        let stopStatuses = job.stop.statuses
        let sent = await sender.send(url, method: request.method, retryable: { (response: HTTPResponse) in
            stopStatuses.contains(response.status) || !RetryPolicy.isRetryable(status: response.status, headers: response.headers)
                ? nil : RetryingSender.Retryable(status: response.status, retryAfter: response.headers["retry-after"])
        }, answer: { ($0.status, $0.headers) }, exchange: { () throws(HTTPError) in
            // What an earlier attempt read is not kept.
            budget?.release(page)
            return try await client.send(request, admit: budget.map { budget in
                { @Sendable bytes in try await budget.take(bytes, for: page) }
            })
        })
        var result: Result<Fetched, PageFault>
        switch sent.result {
        case let .failure(error):
            var fault = PageFault(url: url, error)
            fault.afterRetries = sent.afterRetries
            return FetchOutcome(result: .failure(fault), retries: sent.retries)
        case let .success(response):
            if response.status == 304, let stored {
                result = .success(.page(ServedPage(stored, origin: .notModified, etag: response.headers["etag"],
                                                   lastModified: response.headers["last-modified"], redactor: job.redactor)))
            } else {
                result = PageReader(job: job).read(response, url: url, page: page, requestBody: shownBody)
            }
        }
        if case var .failure(fault) = result {
            fault.afterRetries = sent.afterRetries
            result = .failure(fault)
        }
        return FetchOutcome(result: result, retries: sent.retries)
    }

}
