import MirrorJSON
import MirrorModel
import Yams

/// One job's mapping as its readers see it: its node, its keys with `defaults` merged
/// under its own, and how messages name it.
struct JobNodes {
    package let node: Node
    package let keys: [JobKey: (key: Node, value: Node)]
    /// The keys the job sets itself, not through `defaults`.
    package let own: Set<JobKey>
    package let label: String
    /// The `headers` mappings of `defaults` and of the job, in that order: the job's are
    /// merged over the others, name by name.
    package let headers: [Node]
}

/// A job, read part by part: each part reads its keys, reports what is wrong with them
/// and returns what it could read.
extension JobFileReader {
    mutating func readJob(_ node: Node, defaults: [JobKey: (key: Node, value: Node)]) -> JobSpec? {
        guard case .mapping = node else {
            error(node, "a job must be a mapping with name, url, records, id and table")
            return nil
        }
        let own = mapping(node, keys: JobKey.self, context: "job")
        var keys = defaults
        for (key, pair) in own { keys[key] = pair }

        let nameText = own[.name].flatMap { string($0.value, key: "name") }?.value
        if let nameText, let nameNode = own[.name]?.value, !Self.isValidName(nameText) {
            error(nameNode, "job name '\(nameText)' must use only letters, digits, '_' and '-'")
        }
        let job = JobNodes(node: node, keys: keys, own: Set(own.keys), label: nameText.map { "job '\($0)'" } ?? "job",
                           headers: [defaults[.headers]?.value, own[.headers]?.value].compactMap { $0 })
        _ = required(.name, of: job)

        var redactor = Redactor.none
        let request = readRequest(job, redactor: &redactor)
        let paging = readPaging(job, url: request.url, redactor: &redactor)
        if paging.next?.givesCursor != true {
            if request.body?.json.contains("{cursor}") == true {
                error(job.keys[.body]?.value, "'body' of \(job.label) uses {cursor} but 'next' gives no cursor")
            }
            if let header = request.headers.first(where: { $0.value.contains("{cursor}") }) {
                error(job.keys[.headers]?.value, "header '\(header.name)' of \(job.label) uses {cursor} but 'next' gives no cursor")
            }
        }
        let format = readFormat(job)
        let storage = readStorage(job, format: format)
        if format != .json, format != .xml { checkBodyPaths(job, format: format) }
        let fetching = readFetching(job)
        let files = readDownloads(job)
        let validate = readValidate(job)
        let incremental = readIncremental(job)
        let deleted = readDeleted(job)
        let auth = readJobAuth(job, name: nameText)
        let shard = readShard(job)
        let columns = readColumns(job)
        let explode = readExplode(job, table: storage.table)
        let redaction = readRedaction(job, id: storage.id, columns: columns, explode: explode, redactor: &redactor)
        if let auth { redactor = redactor.merged(with: Redactor(secrets: auth.secrets)).watching(auth.spec.fetched) }
        checkIncremental(job, incremental, prune: storage.prune, known: storage.stop.known,
                         templates: [request.url?.value ?? "", request.body?.json ?? ""] + request.headers.map(\.value))

        guard let name = nameText, let url = request.url, let records = storage.records, let id = storage.id,
              let table = storage.table, let database = storage.database else { return nil }
        var spec = JobSpec(
            name: name, url: RequestTemplate(real: url.value, shown: url.shown), method: request.method, body: request.body,
            headers: request.headers.map { Header(name: $0.name, value: RedactedText(real: $0.value, redactor: redactor)) },
            pages: paging.pages, next: paging.next, format: format, records: records, id: id, table: table,
            database: database, account: storage.account, stop: storage.stop, onChange: storage.onChange,
            prune: storage.prune, shareTable: storage.shareTable, timeout: fetching.timeout, retries: fetching.retries, rateLimit: fetching.rateLimit,
            maxWait: fetching.maxWait, concurrency: fetching.concurrency, refreshAfter: fetching.refreshAfter, maxPageSize: fetching.maxPageSize,
            downloads: files.paths, downloadConcurrency: files.concurrency, maxFileSize: files.maxFileSize,
            minDownloadRate: files.minRate,
            validate: validate, redactor: redactor, incremental: incremental, deleted: deleted, parent: readParent(job),
            auth: auth?.spec, shard: shard, columns: columns, explode: explode, redaction: redaction)
        spec.propagateTrace = fetching.propagateTrace
        return spec
    }

    /// `shard`: an index of a shard, pinning the job's group there; where it is written is
    /// kept for the check against the count of shards, which only `plan` and `run` know.
    private mutating func readShard(_ job: JobNodes) -> ShardPin? {
        guard let node = job.keys[.shard]?.value, let shard = integer(node, key: "shard", in: JobLimits.shard) else { return nil }
        return ShardPin(shard: shard, line: node.mark?.line ?? 1, column: node.mark?.column ?? 1)
    }

    /// A key the job must have; its absence is reported at the job.
    private mutating func required(_ key: JobKey, of job: JobNodes) -> Node? {
        if let value = job.keys[key]?.value { return value }
        error(job.node, "\(job.label) is missing required key '\(key.rawValue)'")
        return nil
    }

    // MARK: The request

    private struct Request {
        var url: Interpolated?
        var method: JobSpec.Method
        var body: BodyTemplate?
        var headers: [(name: String, value: String)]
    }

    /// `url`, `method`, `body`, `headers`; the secrets they hold join `redactor`.
    private mutating func readRequest(_ job: JobNodes, redactor: inout Redactor) -> Request {
        var url: Interpolated?
        if let urlNode = required(.url, of: job), let text = string(urlNode, key: "url", inURL: true) {
            redactor = redactor.merged(with: Redactor(secrets: text.secrets))
            if text.value.hasPrefix("http://") || text.value.hasPrefix("https://") {
                url = text
            } else {
                error(urlNode, "'url' of \(job.label) must start with http:// or https://, not '\(text.shown)'")
            }
        }

        var method = JobSpec.Method.get
        if let methodNode = job.keys[.method]?.value, let text = string(methodNode, key: "method") {
            if let parsed = JobSpec.Method(rawValue: text.value.uppercased()) {
                method = parsed
            } else {
                error(methodNode, "'method' must be GET or POST, not '\(text.shown)'")
            }
        }

        var body: BodyTemplate?
        if let bodyNode = job.keys[.body]?.value {
            if method != .post {
                error(bodyNode, "'body' is sent only with method POST")
            }
            var json = ""
            var secrets: [Redactor.Secret] = []
            if case let .scalar(scalar) = bodyNode {
                if let text = interpolate(scalar.string, at: bodyNode) {
                    json = text.value
                    secrets = text.secrets
                }
            } else {
                appendJSON(bodyNode, to: &json, secrets: &secrets)
            }
            redactor = redactor.merged(with: Redactor(secrets: secrets))
            body = BodyTemplate(json: json, redactor: redactor)
        }
        let bodyNode = job.keys[.body]?.value

        var headers: [(name: String, value: String)] = []
        for headerNode in job.headers {
            guard case let .mapping(map) = headerNode else {
                error(headerNode, "'headers' must be a mapping of header name to value")
                continue
            }
            for (key, value) in map {
                guard let name = scalarText(key), !name.isEmpty, name.allSatisfy(\.isHeaderNameCharacter) else {
                    error(key, "invalid header name '\(scalarText(key) ?? "")'")
                    continue
                }
                guard let text = string(value, key: "header '\(name)'") else { continue }
                redactor = redactor.merged(with: Redactor(secrets: text.secrets))
                // A line break would end the header early; the value itself is not shown.
                if text.value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) {
                    error(value, "header '\(name)' must not hold control characters such as a line break"
                        + (text.secrets.isEmpty ? "" : " (check the environment variable's value)"))
                    continue
                }
                headers.removeAll { $0.name.lowercased() == name.lowercased() }
                headers.append((name, text.value))
            }
        }
        // `Content-Type: application/x-www-form-urlencoded`: the body is sent as a form.
        if let template = body, let bodyNode,
           headers.contains(where: { $0.name.lowercased() == "content-type"
               && $0.value.lowercased().hasPrefix("application/x-www-form-urlencoded") }) {
            var flat = false
            if case let .mapping(map) = bodyNode {
                flat = map.allSatisfy { if case .scalar = $0.value { return true } else { return false } }
            }
            if flat {
                body = BodyTemplate(json: template.json, redactor: redactor, form: true)
            } else {
                error(bodyNode, "a form body (Content-Type: application/x-www-form-urlencoded) must be a mapping of names to values")
            }
        }
        return Request(url: url, method: method, body: body, headers: headers)
    }

    // MARK: Paging

    /// `pages` and `next`.
    private mutating func readPaging(_ job: JobNodes, url: Interpolated?,
                                     redactor: inout Redactor) -> (pages: JobSpec.Pages, next: JobSpec.Next?) {
        var pages = JobSpec.Pages.default
        if let pagesNode = job.keys[.pages]?.value {
            let map = mapping(pagesNode, keys: PagesKey.self, context: "pages")
            if let n = map[.from]?.value, let value = integer(n, key: "pages.from", in: JobLimits.page) { pages.from = value }
            if let n = map[.to]?.value, let value = integer(n, key: "pages.to", in: JobLimits.page) { pages.to = value }
            if let n = map[.step]?.value, let value = integer(n, key: "pages.step", in: JobLimits.step) { pages.step = value }
            if let to = pages.to, to < pages.from {
                error(map[.to]?.value, "'pages.to' (\(to)) is below 'pages.from' (\(pages.from))")
            }
        }

        var next: JobSpec.Next?
        if let nextNode = job.keys[.next]?.value {
            if case .mapping = nextNode {
                let map = mapping(nextNode, keys: NextKey.self, context: "next")
                if map.keys.filter({ $0 != .request }).count != 1 {
                    error(nextNode, "'next' takes one of url, cursor, header or scroll")
                } else if let request = map[.request], map[.scroll] == nil {
                    error(request.key, "'next.request' goes with 'next.scroll' only")
                } else if let n = map[.url]?.value {
                    next = path(n, key: "next.url").map { .url($0) }
                } else if let n = map[.cursor]?.value {
                    next = path(n, key: "next.cursor").map { .cursor($0) }
                } else if let n = map[.scroll]?.value {
                    var request: RequestTemplate?
                    if let requestNode = map[.request]?.value, let text = string(requestNode, key: "next.request", inURL: true) {
                        if !(text.value.hasPrefix("http://") || text.value.hasPrefix("https://")) {
                            error(requestNode, "'next.request' must start with http:// or https://, not '\(text.shown)'")
                        } else if !text.value.contains("{cursor}") {
                            error(requestNode, "'next.request' must hold {cursor}, where the scroll cursor goes")
                        } else {
                            redactor = redactor.merged(with: Redactor(secrets: text.secrets))
                            request = RequestTemplate(real: text.value, shown: text.shown)
                        }
                    }
                    next = path(n, key: "next.scroll").map { .scroll($0, request: request) }
                } else if let n = map[.header]?.value, let text = string(n, key: "next.header") {
                    if text.value.isEmpty || text.value.contains(where: { $0 == ":" || $0.isWhitespace }) {
                        error(n, "'next.header' must be a header name such as X-Next-Page, not '\(text.shown)'")
                    } else {
                        next = .header(text.value)
                    }
                }
            } else if let text = string(nextNode, key: "next") {
                if text.value == "link" {
                    next = .link
                } else if let path = JSONPath(text.value) {
                    next = .path(path)
                } else {
                    error(nextNode, "'next' must be a path in the response such as 'paging.next', or 'link', not '\(text.shown)'")
                }
            }
        }
        if let url, url.value.contains("{cursor}"), next?.givesCursor != true {
            error(job.keys[.url]?.value, "'url' of \(job.label) uses {cursor} but 'next' gives no cursor")
        }
        return (pages, next)
    }

    // MARK: What a response is

    /// `format` and `csv`.
    private mutating func readFormat(_ job: JobNodes) -> JobSpec.Format {
        var format = JobSpec.Format.json
        if let n = job.keys[.format]?.value, let text = string(n, key: "format") {
            switch text.value {
            case "json": format = .json
            case "ndjson", "jsonl": format = .ndjson
            case "csv": format = .csv(delimiter: UInt8(ascii: ","))
            case "xml": format = .xml
            default: error(n, "'format' of \(job.label) must be json, ndjson, jsonl, csv or xml, not '\(text.shown)'")
            }
        }
        guard let csvNode = job.keys[.csv] else { return format }
        guard case .csv = format else {
            error(csvNode.key, "'csv' of \(job.label) goes with 'format: csv' only")
            return format
        }
        let map = mapping(csvNode.value, keys: CSVKey.self, context: "csv")
        if let n = map[.delimiter]?.value, let text = string(n, key: "csv.delimiter") {
            let bytes = Array(text.value.utf8)
            if bytes.count == 1, ![UInt8(ascii: "\""), UInt8(ascii: "\r"), UInt8(ascii: "\n")].contains(bytes[0]) {
                format = .csv(delimiter: bytes[0])
            } else {
                error(n, "'csv.delimiter' of \(job.label) must be one ASCII character such as ';' or a tab (\"\\t\"), "
                    + "not a quote or line break, not '\(text.shown)'")
            }
        }
        return format
    }

    /// A body that is not JSON has no paths into it: `next`, `stop` and `validate` may not
    /// name one. Paging by a `Link` header, a header cursor or `{page}` reads no body.
    private mutating func checkBodyPaths(_ job: JobNodes, format: JobSpec.Format) {
        let instead = "page it by 'next: link', 'next: { header: NAME }' or {page} in the url"
        if let next = job.keys[.next]?.value {
            var readsBody = true
            if case .mapping = next {
                readsBody = mapping(next, keys: NextKey.self, context: nil, report: false)[.header] == nil
            } else if scalarText(next) == "link" {
                readsBody = false
            }
            if readsBody {
                error(next, "'next' of \(job.label) is a path in the response, which format \(format.name) has none of: \(instead)")
            }
        }
        if let stop = job.keys[.stop]?.value, case .mapping = stop {
            let map = mapping(stop, keys: StopKey.self, context: nil, report: false)
            for key in [StopKey.lastPage, .total, .hasMore, .pages] {
                guard let pair = map[key] else { continue }
                error(pair.key, "'stop.\(key.rawValue)' of \(job.label) is a path in the response, which format \(format.name) "
                    + "has none of: stop on an empty page (the default) or 'stop.short'")
            }
        }
        if let validate = job.keys[.validate] {
            error(validate.key, "'validate' of \(job.label) checks paths in the response, which format \(format.name) has none of: remove it")
        }
    }

    // MARK: Where records go

    private struct Storage {
        var records: JSONPath?
        var id: JSONPath?
        var table: String?
        var database: String?
        var account: String
        var stop: JobSpec.Stop
        var onChange: JobSpec.OnChange
        var prune: Bool
        var shareTable: Bool
    }

    /// `records`, `id`, `table`, `database`, `account`, `stop`, `on_change`, `prune`. An
    /// NDJSON or CSV body is read as an array of its records: `records` is `.`, and the job
    /// may not set it (from `defaults` it is let be). XML names its records by element path.
    private mutating func readStorage(_ job: JobNodes, format: JobSpec.Format) -> Storage {
        var records = JSONPath(".")
        if format == .json || format == .xml {
            records = path(required(.records, of: job), key: "records")
        } else if job.own.contains(.records), let pair = job.keys[.records] {
            error(pair.key, "'records' does not apply to \(job.label), whose format \(format.name) makes each "
                + (format == .ndjson ? "line" : "row") + " a record: remove it")
        }
        let id = path(required(.id, of: job), key: "id")

        var table: String?
        if let tableNode = required(.table, of: job), let text = string(tableNode, key: "table") {
            if !Self.isValidTable(text.value) {
                error(tableNode, "table name '\(text.shown)' must match [A-Za-z_][A-Za-z0-9_]* and not start with '_mirror_' or 'sqlite_'")
            } else if let index = ReservedNames.indexNames(of: text.value).first(where: { $0.lowercased().hasPrefix("sqlite_") }) {
                error(tableNode, "table name '\(text.shown)' would name its index '\(index)', and SQLite reserves names "
                    + "starting with 'sqlite_' for itself: name the table otherwise")
            } else if text.value.lowercased() == ReservedNames.legacyMigrations {
                error(tableNode, "table name '\(text.shown)' is taken: files of earlier mirror releases keep their schema versions in it")
            } else {
                table = text.value
            }
        }

        var database = table.map { "\($0).sqlite" }
        if let dbNode = job.keys[.database]?.value, let text = string(dbNode, key: "database") {
            if text.value.isEmpty || text.value.contains("/") || text.value.hasPrefix(".") {
                error(dbNode, "'database' must be a file name inside the output folder, not '\(text.shown)'")
            } else if text.value == ReservedNames.filesFolder {
                error(dbNode, "'database' cannot be '\(ReservedNames.filesFolder)': that name in the output folder holds downloaded files")
            } else {
                database = text.value
            }
        }

        var account = ""
        if let accountNode = job.keys[.account]?.value, let text = string(accountNode, key: "account") {
            account = text.value
        }

        var stop = JobSpec.Stop.default
        if let stopNode = job.keys[.stop]?.value {
            let map = mapping(stopNode, keys: StopKey.self, context: "stop")
            if let n = map[.empty]?.value, let value = bool(n, key: "stop.empty") { stop.empty = value }
            if let n = map[.known]?.value {
                // A word may be quoted (`"record"`); true and false are YAML's booleans only
                // when plain.
                switch (scalarText(n), isPlain(n)) {
                case ("true", true), ("page", _): stop.known = .page
                case ("record", _): stop.known = .record
                case ("since", _): stop.known = .since
                case ("false", true): stop.known = nil
                default: error(n, "'stop.known' must be true, false, page, record or since, not '\(scalarText(n) ?? "a collection")'")
                }
            }
            if let n = map[.status]?.value {
                let items: [Node]
                if case let .sequence(sequence) = n { items = Array(sequence) } else { items = [n] }
                for item in items {
                    if let code = integer(item, key: "stop.status"), (100...599).contains(code) {
                        stop.statuses.insert(code)
                    } else {
                        error(item, "'stop.status' must list HTTP statuses such as [404, 410]")
                    }
                }
            }
            if let n = map[.lastPage]?.value { stop.lastPage = path(n, key: "stop.last_page") }
            if let n = map[.total]?.value { stop.total = path(n, key: "stop.total") }
            if let n = map[.hasMore]?.value { stop.hasMore = path(n, key: "stop.has_more") }
            if let n = map[.pages]?.value { stop.pages = path(n, key: "stop.pages") }
            if let n = map[.short]?.value { stop.short = integer(n, key: "stop.short", in: JobLimits.shortPage) }
            if let lastPage = map[.lastPage], map[.pages] != nil {
                error(lastPage.key, "'stop.last_page' and 'stop.pages' both say where the walk ends: keep one")
            }
        }

        var onChange = JobSpec.OnChange.replace
        if let n = job.keys[.onChange]?.value, let text = string(n, key: "on_change") {
            if let value = JobSpec.OnChange(rawValue: text.value) { onChange = value } else {
                error(n, "'on_change' must be replace or keep, not '\(text.shown)'")
            }
        }
        var prune = false
        if let n = job.keys[.prune]?.value, let value = bool(n, key: "prune") { prune = value }
        var shareTable = false
        if let n = job.keys[.shareTable]?.value, let value = bool(n, key: "share_table") { shareTable = value }
        return Storage(records: records, id: id, table: table, database: database, account: account, stop: stop,
                       onChange: onChange, prune: prune, shareTable: shareTable)
    }

    // MARK: How requests are made

    private struct Fetching {
        var timeout: Double
        var retries: Int
        var rateLimit: RateLimit?
        var concurrency: Int
        var refreshAfter: Double?
        var maxPageSize: Int
        var maxWait = JobSpec.defaultMaxWait
        var propagateTrace = false
    }

    /// `timeout`, `retries`, `rate_limit`, `concurrency`, `refresh_after`, `max_page_size`, `max_wait`,
    /// `propagate_trace`.
    private mutating func readFetching(_ job: JobNodes) -> Fetching {
        var timeout = 30.0
        if let n = job.keys[.timeout]?.value,
           let seconds = duration(n, key: "timeout", in: JobLimits.timeout, examples: "30s, 5m or 12h") {
            timeout = seconds
        }

        var retries = 4
        if let n = job.keys[.retries]?.value, let value = integer(n, key: "retries", in: JobLimits.retries) {
            retries = value
        }

        var rateLimit: RateLimit?
        if let n = job.keys[.rateLimit]?.value, let text = string(n, key: "rate_limit") {
            if let limit = RateLimit(text.value) {
                if JobLimits.rateCount.contains(limit.count) { rateLimit = limit } else {
                    error(n, "'rate_limit' must allow between \(JobLimits.rateCount.lowerBound) and \(JobLimits.rateCount.upperBound) "
                        + "requests per s, m or h, not '\(text.shown)'")
                }
            } else {
                error(n, "'rate_limit' must be requests per time such as 5/s, 100/m or 1000/h, not '\(text.shown)'")
            }
        }
        var concurrency = 4
        if let n = job.keys[.concurrency]?.value, let value = integer(n, key: "concurrency", in: JobLimits.concurrency) {
            concurrency = value
        }
        var refreshAfter: Double?
        if let n = job.keys[.refreshAfter]?.value {
            refreshAfter = duration(n, key: "refresh_after", in: JobLimits.refreshAfter, examples: "30s, 5m, 12h or 7d")
        }
        var maxPageSize = JobSpec.defaultMaxPageSize
        if let n = job.keys[.maxPageSize]?.value,
           let bytes = size(n, key: "max_page_size", in: JobLimits.pageSize, examples: "500KB, 64MB or 1GB") {
            maxPageSize = bytes
        }
        var fetching = Fetching(timeout: timeout, retries: retries, rateLimit: rateLimit, concurrency: concurrency,
                                refreshAfter: refreshAfter, maxPageSize: maxPageSize)
        if let n = job.keys[.maxWait]?.value,
           let seconds = duration(n, key: "max_wait", in: JobLimits.maxWait, examples: "30s, 5m or 1h") {
            fetching.maxWait = seconds
        }
        if let n = job.keys[.propagateTrace]?.value, let value = bool(n, key: "propagate_trace") {
            fetching.propagateTrace = value
        }
        return fetching
    }

    // MARK: Files and checks

    /// `downloads`, `download_concurrency`, `max_file_size`, `min_download_rate`.
    private mutating func readDownloads(_ job: JobNodes) -> (paths: [JSONPath], concurrency: Int, maxFileSize: Int, minRate: Int) {
        var downloads: [JSONPath] = []
        if let n = job.keys[.downloads]?.value {
            let items: [Node]
            if case let .sequence(sequence) = n { items = Array(sequence) } else { items = [n] }
            for item in items {
                if let path = path(item, key: "downloads") { downloads.append(path) }
            }
        }
        var downloadConcurrency = 8
        if let n = job.keys[.downloadConcurrency]?.value,
           let value = integer(n, key: "download_concurrency", in: JobLimits.concurrency) {
            downloadConcurrency = value
        }
        var maxFileSize = JobSpec.defaultMaxFileSize
        if let n = job.keys[.maxFileSize]?.value,
           let bytes = size(n, key: "max_file_size", in: JobLimits.fileSize, examples: "500KB, 50MB or 1GB") {
            maxFileSize = bytes
        }
        var minRate = JobSpec.defaultMinDownloadRate
        if let n = job.keys[.minDownloadRate]?.value,
           let bytes = size(n, key: "min_download_rate", in: JobLimits.downloadRate, examples: "1KB, 100KB or 0") {
            minRate = bytes
        }
        return (downloads, downloadConcurrency, maxFileSize, minRate)
    }

    /// `validate`: paths a response must hold, with their kinds.
    private mutating func readValidate(_ job: JobNodes) -> [(path: JSONPath, kind: JSONKind)] {
        var validate: [(path: JSONPath, kind: JSONKind)] = []
        if let n = job.keys[.validate]?.value {
            if case let .mapping(map) = n {
                let kinds: [String: JSONKind] = [
                    "object": .object, "array": .array, "string": .string, "number": .number, "bool": .bool, "null": .null,
                ]
                for (keyNode, valueNode) in map {
                    let path = self.path(keyNode, key: "validate")
                    guard let kindText = string(valueNode, key: "validate")?.value else { continue }
                    guard let kind = kinds[kindText] else {
                        error(valueNode, "'validate' types are object, array, string, number, bool or null, not '\(kindText)'")
                        continue
                    }
                    if let path { validate.append((path, kind)) }
                }
            } else {
                error(n, "'validate' must be a mapping of path to type, such as { data.list: array }")
            }
        }
        return validate
    }
}
