import Foundation
import Yams

/// Reads job files into `JobFile` values, collecting every problem before reporting any.
public struct JobFileLoader: Sendable {
    public let environment: [String: String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Loads every file; throws all problems of all files at once.
    public func load(paths: [String]) throws(ConfigError) -> [JobFile] {
        var files: [JobFile] = []
        var diagnostics: [Diagnostic] = []
        for path in paths {
            do {
                files.append(try load(path: path))
            } catch {
                diagnostics += error.diagnostics
            }
        }
        if !diagnostics.isEmpty { throw ConfigError(diagnostics) }
        return files
    }

    public func load(path: String) throws(ConfigError) -> JobFile {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigError([Diagnostic(file: path, line: 1, column: 1, message: "cannot read the file: \(Self.reason(error))")])
        }
        let folder = (path as NSString).deletingLastPathComponent
        return try parse(text: text, path: path, folder: folder.isEmpty ? "." : folder)
    }

    /// Parses job-file text; `folder` anchors a relative `output:`.
    public func parse(text: String, path: String, folder: String) throws(ConfigError) -> JobFile {
        var reader = JobFileReader(file: path, environment: environment)
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw ConfigError([reader.diagnostic(for: error)])
        } catch {
            throw ConfigError([Diagnostic(file: path, line: 1, column: 1, message: "not YAML: \(error)")])
        }
        let file = reader.readFile(root, folder: folder)
        if !reader.diagnostics.isEmpty || file == nil { throw ConfigError(reader.diagnostics) }
        return file!
    }

    static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
           underlying.domain == NSPOSIXErrorDomain,
           let code = POSIXErrorCode(rawValue: Int32(underlying.code)) {
            return String(cString: strerror(code.rawValue)).lowercased()
        }
        if nsError.domain == NSCocoaErrorDomain, nsError.code == NSFileReadNoSuchFileError {
            return "no such file"
        }
        return nsError.localizedDescription
    }
}

/// The validating walk over the YAML node tree of one file.
struct JobFileReader {
    let file: String
    let environment: [String: String]
    private(set) var diagnostics: [Diagnostic] = []

    init(file: String, environment: [String: String]) {
        self.file = file
        self.environment = environment
    }

    // MARK: Diagnostics

    mutating func error(_ node: Node?, _ message: String) {
        let mark = node?.mark
        diagnostics.append(Diagnostic(file: file, line: mark?.line ?? 1, column: mark?.column ?? 1, message: message))
    }

    func diagnostic(for error: YamlError) -> Diagnostic {
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _),
             let .composer(context, problem, mark, _):
            let prefix = context.map { "\($0.text), " } ?? ""
            return Diagnostic(file: file, line: mark.line, column: mark.column, message: "invalid YAML: \(prefix)\(problem)")
        case let .reader(problem, _, _, _):
            return Diagnostic(file: file, line: 1, column: 1, message: "invalid YAML: \(problem)")
        case let .duplicatedKeysInMapping(duplicates, context):
            return Diagnostic(file: file, line: context.mark.line, column: context.mark.column,
                              message: "duplicate key '\(duplicates.joined(separator: "', '"))'")
        default:
            return Diagnostic(file: file, line: 1, column: 1, message: "invalid YAML: \(error)")
        }
    }

    // MARK: The file

    mutating func readFile(_ root: Node?, folder: String) -> JobFile? {
        guard let root, case .mapping = root else {
            error(root, "a job file must be a mapping with 'version' and 'jobs'")
            return nil
        }
        let top = mapping(root, keys: FileKey.self, context: "the job file")
        if let version = top[.version]?.value {
            if scalarText(version) != "1" || !isPlain(version) {
                error(version, "unsupported version '\(scalarText(version) ?? "")': this mirror reads version 1")
            }
        } else {
            error(root, "missing required key 'version' (version: 1)")
        }
        var output: String?
        if let node = top[.output]?.value, let text = string(node, key: "output") {
            output = text.value.hasPrefix("/") || folder == "." ? text.value : (folder as NSString).appendingPathComponent(text.value)
        }
        var defaults: [JobKey: (key: Node, value: Node)] = [:]
        if let node = top[.defaults]?.value {
            defaults = mapping(node, keys: JobKey.self, context: "defaults")
            for (key, pair) in defaults where key.isJobOnly {
                error(pair.key, "'\(key.rawValue)' cannot be set in defaults")
            }
            defaults = defaults.filter { !$0.key.isJobOnly }
        }
        var jobs: [JobSpec] = []
        var names: [String: Node] = [:]
        if let node = top[.jobs]?.value {
            if case let .sequence(sequence) = node, !sequence.isEmpty {
                for jobNode in sequence {
                    guard let job = readJob(jobNode, defaults: defaults) else { continue }
                    if let first = names[job.name] {
                        let at = first.mark.map { "\($0.line):\($0.column)" } ?? "?"
                        error(mapping(jobNode, keys: JobKey.self, context: nil, report: false)[.name]?.value,
                              "duplicate job name '\(job.name)' (first defined at \(at))")
                    } else {
                        names[job.name] = mapping(jobNode, keys: JobKey.self, context: nil, report: false)[.name]?.value
                        jobs.append(job)
                    }
                }
            } else {
                error(node, "'jobs' must be a non-empty list of jobs")
            }
        } else {
            error(root, "missing required key 'jobs'")
        }
        return JobFile(path: file, output: output, jobs: jobs)
    }

    // MARK: A job

    mutating func readJob(_ node: Node, defaults: [JobKey: (key: Node, value: Node)]) -> JobSpec? {
        guard case .mapping = node else {
            error(node, "a job must be a mapping with name, url, records, id and table")
            return nil
        }
        let own = mapping(node, keys: JobKey.self, context: "job")
        var keys = defaults
        for (key, pair) in own { keys[key] = pair }

        var redactor = Redactor.none
        let nameText = own[.name].flatMap { string($0.value, key: "name") }?.value
        let jobLabel = nameText.map { "job '\($0)'" } ?? "job"
        if let nameText, let nameNode = own[.name]?.value, !Self.isValidName(nameText) {
            error(nameNode, "job name '\(nameText)' must use only letters, digits, '_' and '-'")
        }
        func required(_ key: JobKey, _ reader: inout JobFileReader) -> Node? {
            if let value = keys[key]?.value { return value }
            reader.error(node, "\(jobLabel) is missing required key '\(key.rawValue)'")
            return nil
        }
        _ = required(.name, &self)

        var url: Interpolated?
        if let urlNode = required(.url, &self), let text = string(urlNode, key: "url") {
            redactor = redactor.merged(with: Redactor(secrets: text.secrets))
            if text.value.hasPrefix("http://") || text.value.hasPrefix("https://") {
                url = text
            } else {
                error(urlNode, "'url' of \(jobLabel) must start with http:// or https://, not '\(text.shown)'")
            }
        }

        var method = JobSpec.Method.get
        if let methodNode = keys[.method]?.value, let text = string(methodNode, key: "method") {
            if let parsed = JobSpec.Method(rawValue: text.value.uppercased()) {
                method = parsed
            } else {
                error(methodNode, "'method' must be GET or POST, not '\(text.shown)'")
            }
        }

        var body: BodyTemplate?
        if let bodyNode = keys[.body]?.value {
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

        var headers: [(name: String, value: String)] = []
        var headerNodes: [Node] = []
        if let defaultHeaders = defaults[.headers]?.value { headerNodes.append(defaultHeaders) }
        if let ownHeaders = own[.headers]?.value { headerNodes.append(ownHeaders) }
        for headerNode in headerNodes {
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

        var pages = JobSpec.Pages.default
        if let pagesNode = keys[.pages]?.value {
            let map = mapping(pagesNode, keys: PagesKey.self, context: "pages")
            if let n = map[.from]?.value, let value = integer(n, key: "pages.from") { pages.from = value }
            if let n = map[.to]?.value, let value = integer(n, key: "pages.to") { pages.to = value }
            if let n = map[.step]?.value, let value = integer(n, key: "pages.step") {
                if value > 0 { pages.step = value } else { error(n, "'pages.step' must be a positive integer, not \(value)") }
            }
            if let to = pages.to, to < pages.from {
                error(map[.to]?.value, "'pages.to' (\(to)) is below 'pages.from' (\(pages.from))")
            }
        }

        var next: JobSpec.Next?
        if let nextNode = keys[.next]?.value, let text = string(nextNode, key: "next") {
            if text.value == "link" {
                next = .link
            } else if let path = JSONPath(text.value) {
                next = .path(path)
            } else {
                error(nextNode, "'next' must be a path in the response such as 'paging.next', or 'link', not '\(text.shown)'")
            }
        }
        if let url, url.value.contains("{cursor}") {
            if case .path = next {} else {
                error(keys[.url]?.value, "'url' of \(jobLabel) uses {cursor} but 'next' is not a path in the response")
            }
        }

        let records = path(required(.records, &self), key: "records")
        let id = path(required(.id, &self), key: "id")

        var table: String?
        if let tableNode = required(.table, &self), let text = string(tableNode, key: "table") {
            if Self.isValidTable(text.value) {
                table = text.value
            } else {
                error(tableNode, "table name '\(text.shown)' must match [A-Za-z_][A-Za-z0-9_]* and not start with '_mirror_' or 'sqlite_'")
            }
        }

        var database = table.map { "\($0).sqlite" }
        if let dbNode = keys[.database]?.value, let text = string(dbNode, key: "database") {
            if text.value.isEmpty || text.value.contains("/") || text.value.hasPrefix(".") {
                error(dbNode, "'database' must be a file name inside the output folder, not '\(text.shown)'")
            } else {
                database = text.value
            }
        }

        var account = ""
        if let accountNode = keys[.account]?.value, let text = string(accountNode, key: "account") {
            account = text.value
        }

        var stop = JobSpec.Stop.default
        if let stopNode = keys[.stop]?.value {
            let map = mapping(stopNode, keys: StopKey.self, context: "stop")
            if let n = map[.empty]?.value, let value = bool(n, key: "stop.empty") { stop.empty = value }
            if let n = map[.known]?.value, let value = bool(n, key: "stop.known") { stop.known = value }
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
        }

        var onChange = JobSpec.OnChange.replace
        if let n = keys[.onChange]?.value, let text = string(n, key: "on_change") {
            if let value = JobSpec.OnChange(rawValue: text.value) { onChange = value } else {
                error(n, "'on_change' must be replace or keep, not '\(text.shown)'")
            }
        }
        var prune = false
        if let n = keys[.prune]?.value, let value = bool(n, key: "prune") { prune = value }
        var timeout = 30.0
        if let n = keys[.timeout]?.value, let text = string(n, key: "timeout") {
            if let seconds = Self.duration(text.value), seconds > 0 { timeout = seconds } else {
                error(n, "'timeout' must be a duration such as 30s, 5m or 12h, not '\(text.shown)'")
            }
        }

        var retries = 4
        if let n = keys[.retries]?.value, let value = integer(n, key: "retries") {
            if value >= 0 { retries = value } else { error(n, "'retries' must not be negative, not \(value)") }
        }

        var rateLimit: RateLimit?
        if let n = keys[.rateLimit]?.value, let text = string(n, key: "rate_limit") {
            rateLimit = RateLimit(text.value)
            if rateLimit == nil { error(n, "'rate_limit' must be requests per time such as 5/s, 100/m or 1000/h, not '\(text.shown)'") }
        }
        var concurrency = 4
        if let n = keys[.concurrency]?.value, let value = integer(n, key: "concurrency") {
            if (1...64).contains(value) { concurrency = value } else {
                error(n, "'concurrency' must be between 1 and 64, not \(value)")
            }
        }
        var refreshAfter: Double?
        if let n = keys[.refreshAfter]?.value, let text = string(n, key: "refresh_after") {
            if let seconds = Self.duration(text.value), seconds > 0 { refreshAfter = seconds } else {
                error(n, "'refresh_after' must be a duration such as 30s, 5m, 12h or 7d, not '\(text.shown)'")
            }
        }
        var maxPageSize = JobSpec.defaultMaxPageSize
        if let n = keys[.maxPageSize]?.value, let text = string(n, key: "max_page_size") {
            if let bytes = Self.byteSize(text.value), bytes > 0 { maxPageSize = bytes } else {
                error(n, "'max_page_size' must be a size such as 500KB, 64MB or 1GB, not '\(text.shown)'")
            }
        }
        var downloads: [JSONPath] = []
        if let n = keys[.downloads]?.value {
            let items: [Node]
            if case let .sequence(sequence) = n { items = Array(sequence) } else { items = [n] }
            for item in items {
                if let path = path(item, key: "downloads") { downloads.append(path) }
            }
        }
        var downloadConcurrency = 8
        if let n = keys[.downloadConcurrency]?.value, let value = integer(n, key: "download_concurrency") {
            if (1...64).contains(value) { downloadConcurrency = value } else {
                error(n, "'download_concurrency' must be between 1 and 64, not \(value)")
            }
        }
        var maxFileSize = JobSpec.defaultMaxFileSize
        if let n = keys[.maxFileSize]?.value, let text = string(n, key: "max_file_size") {
            if let bytes = Self.byteSize(text.value), bytes > 0 { maxFileSize = bytes } else {
                error(n, "'max_file_size' must be a size such as 500KB, 50MB or 1GB, not '\(text.shown)'")
            }
        }
        var validate: [(path: JSONPath, kind: JSONKind)] = []
        if let n = keys[.validate]?.value {
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

        guard let name = nameText, let url, let records, let id, let table, let database else { return nil }
        return JobSpec(
            name: name, url: RequestTemplate(real: url.value, shown: url.shown), method: method, body: body,
            headers: headers.map { Header(name: $0.name, value: RedactedText(real: $0.value, redactor: redactor)) },
            pages: pages, next: next, records: records, id: id, table: table,
            database: database, account: account, stop: stop, onChange: onChange, prune: prune,
            timeout: timeout, retries: retries, rateLimit: rateLimit, concurrency: concurrency,
            refreshAfter: refreshAfter, maxPageSize: maxPageSize, downloads: downloads,
            downloadConcurrency: downloadConcurrency, maxFileSize: maxFileSize, validate: validate, redactor: redactor)
    }

    // MARK: Values

    /// Reads a mapping, reporting non-string keys, duplicates and unknown keys.
    mutating func mapping<Key: RawRepresentable & CaseIterable>(
        _ node: Node, keys: Key.Type, context: String?, report: Bool = true
    ) -> [Key: (key: Node, value: Node)] where Key.RawValue == String {
        guard case let .mapping(map) = node else {
            if report, let context { error(node, "\(context) must be a mapping") }
            return [:]
        }
        var result: [Key: (key: Node, value: Node)] = [:]
        for (keyNode, value) in map {
            let name = scalarText(keyNode) ?? ""
            guard let key = Key(rawValue: name) else {
                if report {
                    let known = Key.allCases.map(\.rawValue)
                    let hint = closestKey(to: name, in: known).map { " (did you mean '\($0)'?)" } ?? ""
                    error(keyNode, "unknown key '\(name)' in \(context ?? "mapping")\(hint)")
                }
                continue
            }
            if let first = result[key] {
                if report {
                    let at = first.key.mark.map { "\($0.line):\($0.column)" } ?? "?"
                    error(keyNode, "duplicate key '\(name)' (first set at \(at))")
                }
                continue
            }
            result[key] = (keyNode, value)
        }
        return result
    }

    func scalarText(_ node: Node) -> String? {
        if case let .scalar(scalar) = node { return scalar.string }
        return nil
    }

    func isPlain(_ node: Node) -> Bool {
        if case let .scalar(scalar) = node { return scalar.style == .plain }
        return false
    }

    /// A string value with `${NAME}` resolved: `value` to use, `shown` with every
    /// environment value masked, and the `secrets` themselves.
    mutating func string(_ node: Node, key: String) -> Interpolated? {
        guard case let .scalar(scalar) = node else {
            error(node, "'\(key)' must be a string")
            return nil
        }
        return interpolate(scalar.string, at: node)
    }

    struct Interpolated {
        var value: String
        var shown: String
        var secrets: [Redactor.Secret]
    }

    mutating func interpolate(_ text: String, at node: Node) -> Interpolated? {
        guard text.contains("${") else { return Interpolated(value: text, shown: text, secrets: []) }
        var value = ""
        var shown = ""
        var secrets: [Redactor.Secret] = []
        var rest = text[...]
        var failed = false
        while let start = rest.range(of: "${") {
            value += rest[..<start.lowerBound]
            shown += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                error(node, "unterminated '${' in '\(text)'")
                return nil
            }
            let name = String(rest[start.upperBound..<end])
            if !Self.isValidVariable(name) {
                error(node, "'${\(name)}' is not a valid environment variable name")
                failed = true
            } else if let secret = environment[name] {
                value += secret
                shown += Redactor.mask
                secrets.append(Redactor.Secret(name: name, value: secret))
            } else {
                error(node, "environment variable \(name) is not set")
                failed = true
            }
            rest = rest[rest.index(after: end)...]
        }
        value += rest
        shown += rest
        return failed ? nil : Interpolated(value: value, shown: shown, secrets: secrets)
    }

    mutating func integer(_ node: Node, key: String) -> Int? {
        if isPlain(node), let text = scalarText(node), let value = Int(text) { return value }
        error(node, "'\(key)' must be an integer, not '\(scalarText(node) ?? "a collection")'")
        return nil
    }

    mutating func bool(_ node: Node, key: String) -> Bool? {
        if isPlain(node), let text = scalarText(node) {
            if text == "true" { return true }
            if text == "false" { return false }
        }
        error(node, "'\(key)' must be true or false, not '\(scalarText(node) ?? "a collection")'")
        return nil
    }

    mutating func path(_ node: Node?, key: String) -> JSONPath? {
        guard let node, let text = string(node, key: key) else { return nil }
        if let path = JSONPath(text.value) { return path }
        error(node, "'\(key)' must be a dot path such as 'data.list' (or '.' for the whole response), not '\(text.shown)'")
        return nil
    }

    /// Writes a YAML body node as JSON text; plain scalars that read as numbers,
    /// booleans or null stay unquoted.
    mutating func appendJSON(_ node: Node, to out: inout String, secrets: inout [Redactor.Secret]) {
        switch node {
        case let .mapping(map):
            out += "{"
            for (index, pair) in map.enumerated() {
                if index > 0 { out += "," }
                out += Self.quoted(scalarText(pair.key) ?? "")
                out += ":"
                appendJSON(pair.value, to: &out, secrets: &secrets)
            }
            out += "}"
        case let .sequence(sequence):
            out += "["
            for (index, item) in sequence.enumerated() {
                if index > 0 { out += "," }
                appendJSON(item, to: &out, secrets: &secrets)
            }
            out += "]"
        case let .scalar(scalar):
            if scalar.style == .plain {
                let text = scalar.string
                if text == "true" || text == "false" || text == "null" || Self.isJSONNumber(text) {
                    out += text
                    return
                }
            }
            if let text = interpolate(scalar.string, at: node) {
                secrets += text.secrets
                out += Self.quoted(text.value)
            }
        case .alias:
            error(node, "aliases are not supported in 'body'")
        }
    }

    // MARK: Lexical rules

    static func quoted(_ text: String) -> String {
        var bytes: [UInt8] = []
        JSONText.appendQuoted(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    static func isJSONNumber(_ text: String) -> Bool {
        guard let document = try? JSONDocument(parsing: Array(text.utf8)) else { return false }
        return document.root.kind == .number
    }

    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    static func isValidVariable(_ name: String) -> Bool {
        guard let first = name.utf8.first, !first.isASCIIDigit else { return false }
        return name.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "_") }
    }

    static func isValidTable(_ name: String) -> Bool {
        guard isValidVariable(name) else { return false }
        let lower = name.lowercased()
        return !lower.hasPrefix("_mirror_") && !lower.hasPrefix("sqlite_")
    }

    /// `123`, `123B`, `500KB`, `64MB`, `1GB` → bytes (units of 1024).
    public static func byteSize(_ text: String) -> Int? {
        let units: [(String, Int)] = [("KB", 1 << 10), ("MB", 1 << 20), ("GB", 1 << 30), ("B", 1), ("", 1)]
        let upper = text.uppercased()
        for (suffix, scale) in units where upper.hasSuffix(suffix) {
            let number = upper.dropLast(suffix.count)
            guard !number.isEmpty, number.allSatisfy(\.isNumber), let value = Int(number),
                  value <= Int.max / scale else { continue }
            return value * scale
        }
        return nil
    }

    /// `500ms`, `30s`, `5m`, `12h`, `7d` → seconds.
    public static func duration(_ text: String) -> Double? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            guard !number.isEmpty, number.allSatisfy({ $0.isNumber || $0 == "." }),
                  let value = Double(number) else { continue }
            return value * scale
        }
        return nil
    }
}

extension UInt8 {
    var isASCIIDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
    var isASCIIAlphanumeric: Bool {
        isASCIIDigit || (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "z"))
            || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z"))
    }
}

extension Character {
    /// RFC 9110 token characters.
    var isHeaderNameCharacter: Bool {
        guard isASCII, let byte = asciiValue else { return false }
        return byte.isASCIIAlphanumeric || "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}
