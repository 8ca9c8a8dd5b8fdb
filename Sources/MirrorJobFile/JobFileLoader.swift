import Foundation
import MirrorFiles
import MirrorJSON
package import MirrorModel
import Yams

/// Reads job files into `JobFile` values, collecting every problem before reporting any.
package struct JobFileLoader: Sendable {
    /// `500ms`, `30s`, `5m`, `12h`, `7d` → seconds, as job files write durations.
    package static func duration(_ text: String) -> Double? { JobFileReader.duration(text) }
    /// `500KB`, `64MB`, `1GB` → bytes, as job files write sizes (`max_file_size`).
    package static func byteSize(_ text: String) -> Int? { JobFileReader.byteSize(text) }

    package let environment: [String: String]

    package init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Loads every file; throws all problems of all files at once.
    package func load(paths: [String]) throws(ConfigError) -> [JobFile] {
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

    package func load(path: String) throws(ConfigError) -> JobFile {
        let bytes: Data
        do {
            bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError([Diagnostic(file: path, line: 1, column: 1, message: "cannot read the file: \(Self.reason(error))")])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            let bad = Self.firstInvalidUTF8(bytes)
            throw ConfigError([Diagnostic(file: path, line: bad.line, column: bad.column,
                                          message: "not UTF-8 text (byte 0x\(Hex.string([bad.byte])))")])
        }
        let folder = Paths.parent(of: path)
        return try parse(text: text, path: path, folder: folder.isEmpty ? "." : folder)
    }

    /// Where an alias (`*name`) stands as a mapping key (`*name: …`, `? *name`), outside
    /// quotes and comments; 1-based. No job file needs one, and one that names a bomb would
    /// keep the YAML library hashing it for hours.
    static func aliasKey(in text: String) -> (line: Int, column: Int)? {
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let characters = Array(line)
            var quote: Character?
            var column = 0
            while column < characters.count {
                let character = characters[column]
                if let open = quote {
                    if character == open { quote = nil }
                    column += 1
                    continue
                }
                if character == "\"" || character == "'" {
                    quote = character
                } else if character == "#", column == 0 || characters[column - 1] == " " {
                    break
                } else if character == "*", column == 0 || " \t[{,?".contains(characters[column - 1]) {
                    var end = column + 1
                    while end < characters.count, characters[end].isLetter || characters[end].isNumber
                        || characters[end] == "_" || characters[end] == "-" { end += 1 }
                    var after = end
                    while after < characters.count, characters[after] == " " { after += 1 }
                    let isKey = after < characters.count && characters[after] == ":"
                        && (after + 1 == characters.count || " \t,}]".contains(characters[after + 1]))
                    var before = column - 1
                    while before >= 0, characters[before] == " " { before -= 1 }
                    let isExplicitKey = before >= 0 && characters[before] == "?"
                    if end > column + 1, isKey || isExplicitKey { return (index + 1, column + 1) }
                    column = end
                    continue
                }
                column += 1
            }
        }
        return nil
    }

    /// Parses job-file text; `folder` anchors a relative `output:`.
    package func parse(text: String, path: String, folder: String) throws(ConfigError) -> JobFile {
        var reader = JobFileReader(file: path, environment: environment)
        // The YAML library hashes every mapping key whole, aliases expanded, before the tree
        // can be checked: an alias used as a key is refused from the text itself.
        if let mark = Self.aliasKey(in: text) {
            throw ConfigError([Diagnostic(file: path, line: mark.line, column: mark.column,
                                          message: "an alias cannot be a mapping key")])
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw ConfigError([reader.diagnostic(for: error)])
        } catch {
            throw ConfigError([Diagnostic(file: path, line: 1, column: 1, message: "not YAML: \(error)")])
        }
        if let root, !reader.aliasesWithinBudget(root) {
            throw ConfigError(reader.diagnostics)
        }
        let file = reader.readFile(root, folder: folder)
        if !reader.diagnostics.isEmpty || file == nil { throw ConfigError(reader.diagnostics) }
        return file!
    }

    /// Where the first byte that is not part of valid UTF-8 is: its line and column (in
    /// characters, as YAML positions count them) and its value.
    static func firstInvalidUTF8(_ bytes: some Collection<UInt8>) -> (line: Int, column: Int, byte: UInt8) {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        var line = 1
        var column = 1
        while true {
            switch parser.parseScalar(from: &iterator) {
            case let .valid(scalar):
                offset += scalar.count
                if scalar.count == 1, scalar.first == UInt8(ascii: "\n") {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
            case .error:
                return (line, column, bytes[bytes.index(bytes.startIndex, offsetBy: offset)])
            case .emptyInput:
                return (line, column, 0)
            }
        }
    }

    package static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
           underlying.domain == NSPOSIXErrorDomain,
           let code = POSIXErrorCode(rawValue: Int32(underlying.code)) {
            return SystemError.text(errno: code.rawValue)
        }
        if nsError.domain == NSCocoaErrorDomain, nsError.code == NSFileReadNoSuchFileError {
            return "no such file"
        }
        return nsError.localizedDescription
    }
}

/// The validating walk over the YAML node tree of one file.
struct JobFileReader {
    package let file: String
    let environment: [String: String]
    /// Variables the file names in `not_secret`: their values are shown, not masked.
    private var plain: Set<String> = []
    /// The file's folder: relative paths in it are read against it.
    package private(set) var folder = "."
    /// The top-level `auth` definitions, by name.
    package private(set) var authDefinitions: [String: ReadAuth] = [:]
    /// Every name the top-level `auth` defines, read without error or not.
    package var authNames: Set<String> = []
    private(set) var diagnostics: [Diagnostic] = []

    package init(file: String, environment: [String: String]) {
        self.file = file
        self.environment = environment
    }

    // MARK: Diagnostics

    package mutating func error(_ node: Node?, _ message: String) {
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

    // MARK: Aliases

    /// The values that aliases (`*name`) may repeat in one file. Each alias stands for the
    /// whole value its anchor (`&name`) marks, aliases included, so a few nested lines can
    /// stand for billions of values: a file past this is refused before it is read.
    static let aliasBudget = 10_000

    /// Walks the tree as reading it would, every alias expanded, and reports the file once
    /// its aliases have repeated more than `aliasBudget` values, at the value whose aliases
    /// went past it. A list or mapping met again at the place it was first met at is a
    /// repetition, and so is every value inside it. (A scalar alias repeats one value per
    /// alias written, so it cannot grow past the file's own size: it is not counted.)
    /// True when the file is within the budget.
    mutating func aliasesWithinBudget(_ root: Node) -> Bool {
        struct Place: Hashable {
            let line: Int
            let column: Int
            let isMapping: Bool
        }
        var seen = Set<Place>()
        var repeated = 0
        var culprit: Node?
        /// False once the budget is spent. `original` is the nearest list or mapping met for
        /// the first time; `inRepetition`, whether an enclosing one was met before.
        func visit(_ node: Node, original: Node, inRepetition: Bool) -> Bool {
            var original = original
            var isRepetition = inRepetition
            switch node {
            case .mapping, .sequence:
                if !isRepetition, let mark = node.mark {
                    let place = Place(line: mark.line, column: mark.column, isMapping: node.mapping != nil)
                    if seen.insert(place).inserted { original = node } else { isRepetition = true }
                }
            case .scalar, .alias:
                break
            }
            if isRepetition {
                repeated += 1
                if repeated > Self.aliasBudget {
                    culprit = original
                    return false
                }
            }
            switch node {
            case let .mapping(mapping):
                for (key, value) in mapping {
                    guard visit(key, original: original, inRepetition: isRepetition),
                          visit(value, original: original, inRepetition: isRepetition) else { return false }
                }
            case let .sequence(sequence):
                for item in sequence {
                    guard visit(item, original: original, inRepetition: isRepetition) else { return false }
                }
            case .scalar, .alias:
                break
            }
            return true
        }
        if visit(root, original: root, inRepetition: false) { return true }
        error(culprit, "aliases here expand to more than \(Self.aliasBudget) values")
        return false
    }

    // MARK: The file

    mutating func readFile(_ root: Node?, folder: String) -> JobFile? {
        self.folder = folder
        guard let root, case .mapping = root else {
            error(root, "a job file must be a mapping with 'version' and 'jobs'")
            return nil
        }
        let top = mapping(root, keys: FileKey.self, context: "the job file")
        if let node = top[.notSecret]?.value {
            let items: [Node]
            if case let .sequence(sequence) = node { items = Array(sequence) } else { items = [node] }
            for item in items {
                if let name = scalarText(item), Self.isValidVariable(name) {
                    plain.insert(name)
                } else {
                    error(item, "'not_secret' must list environment variable names such as [PORT, CITY_ID]")
                }
            }
        }
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
            switch output.flatMap(OutputObstacle.find(for:)) {
            case nil: break
            case .isFile: error(node, "output folder '\(text.shown)' is a file")
            case let .insideFile(file):
                error(node, "output folder '\(text.shown)' cannot be made: '\(Redactor(secrets: text.secrets).redact(file))' is a file")
            }
        }
        if let node = top[.auth]?.value {
            authDefinitions = readAuthDefinitions(node, output: output)
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
        var tables = TableClaims()
        if let node = top[.jobs]?.value {
            if case let .sequence(sequence) = node, !sequence.isEmpty {
                for jobNode in sequence {
                    guard let job = readJob(jobNode, defaults: defaults) else { continue }
                    if let first = names[job.name] {
                        let at = first.mark.map { "\($0.line):\($0.column)" } ?? "?"
                        error(mapping(jobNode, keys: JobKey.self, context: nil, report: false)[.name]?.value,
                              "duplicate job name '\(job.name)' (first defined at \(at))")
                    } else if let conflict = tables.claim(job) {
                        let own = mapping(jobNode, keys: JobKey.self, context: nil, report: false)
                        // A view's name is reported at its list, in the job or in `defaults`.
                        var at = own[.table]?.value
                        if let list = conflict.list {
                            for case let .mapping(map)? in [defaults[.explode]?.value, own[.explode]?.value] {
                                at = map.first { scalarText($0.key) == list }?.key ?? at
                            }
                        }
                        error(at, conflict.message)
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
        var jobNodes: [String: Node] = [:]
        if case let .sequence(sequence)? = top[.jobs]?.value {
            for jobNode in sequence {
                if let name = mapping(jobNode, keys: JobKey.self, context: nil, report: false)[.name]?.value,
                   let text = scalarText(name), jobNodes[text] == nil {
                    jobNodes[text] = jobNode
                }
            }
        }
        linkParents(&jobs, nodes: jobNodes)
        // `shard:` pins that cannot all hold. The jobs of one file share an output folder,
        // whatever `--output` says, so this needs no folder; pins across files, and pins
        // past the last shard, are checked by `plan` and `run --shard`, which know them.
        let read = JobFile(path: file, output: output, jobs: jobs)
        for group in ShardPlan.groups([read], folders: [""]) {
            diagnostics += ShardPlan.pinProblems(group, files: [read], count: nil)
        }
        return read
    }

    // MARK: Values

    /// Reads a mapping, reporting non-string keys, duplicates and unknown keys.
    package mutating func mapping<Key: RawRepresentable & CaseIterable>(
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

    package func scalarText(_ node: Node) -> String? {
        if case let .scalar(scalar) = node { return scalar.string }
        return nil
    }

    func isPlain(_ node: Node) -> Bool {
        if case let .scalar(scalar) = node { return scalar.style == .plain }
        return false
    }

    /// A string value with `${NAME}` resolved: `value` to use, `shown` with every
    /// environment value masked, and the `secrets` themselves.
    /// `inURL`: a value placed in the URL's path, query or fragment is percent-encoded, as
    /// one path segment or query value: a secret holding `&`, `=`, `/` or a space reaches
    /// the API whole. One in the scheme and host (`${BASE}/items`) is placed as it is.
    package mutating func string(_ node: Node, key: String, inURL: Bool = false) -> Interpolated? {
        guard case let .scalar(scalar) = node else {
            error(node, "'\(key)' must be a string")
            return nil
        }
        return interpolate(scalar.string, at: node, inURL: inURL)
    }

    struct Interpolated {
        package var value: String
        package var shown: String
        package var secrets: [Redactor.Secret]
    }

    mutating func interpolate(_ text: String, at node: Node, inURL: Bool = false) -> Interpolated? {
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
            } else if let secret = environment[name], plain.contains(name) {
                let placed = inURL && Self.isPastHost(value) ? secret.addingPercentEncodingForQuery() : secret
                value += placed
                shown += placed
            } else if let secret = environment[name] {
                value += inURL && Self.isPastHost(value) ? secret.addingPercentEncodingForQuery() : secret
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

    /// Whether a URL that begins with `prefix` has reached its path, query or fragment.
    static func isPastHost(_ prefix: String) -> Bool {
        guard let scheme = prefix.range(of: "://") else { return prefix.contains("?") || prefix.contains("#") }
        return prefix[scheme.upperBound...].contains { $0 == "/" || $0 == "?" || $0 == "#" }
    }

    package mutating func integer(_ node: Node, key: String) -> Int? {
        if isPlain(node), let text = scalarText(node), let value = Int(text) { return value }
        error(node, "'\(key)' must be an integer, not '\(scalarText(node) ?? "a collection")'")
        return nil
    }

    /// An integer within `range`; one outside it, however many digits it has, is reported
    /// with the range.
    package mutating func integer(_ node: Node, key: String, in range: ClosedRange<Int>) -> Int? {
        guard isPlain(node), let text = scalarText(node), Self.isInteger(text) else {
            error(node, "'\(key)' must be an integer, not '\(scalarText(node) ?? "a collection")'")
            return nil
        }
        if let value = Int(text), range.contains(value) { return value }
        error(node, "'\(key)' must be between \(range.lowerBound) and \(range.upperBound), not \(text)")
        return nil
    }

    /// A duration (`500ms`, `30s`, `5m`, `12h`, `7d`) within `range`, in seconds.
    package mutating func duration(_ node: Node, key: String, in range: ClosedRange<Double>, examples: String) -> Double? {
        guard let text = string(node, key: key) else { return nil }
        guard let seconds = Self.duration(text.value) else {
            error(node, "'\(key)' must be a duration such as \(examples), not '\(text.shown)'")
            return nil
        }
        guard range.contains(seconds) else {
            error(node, "'\(key)' must be between \(durationText(range.lowerBound)) and \(durationText(range.upperBound)), not '\(text.shown)'")
            return nil
        }
        return seconds
    }

    /// A size (`500KB`, `64MB`, `1GB`) within `range`, in bytes.
    package mutating func size(_ node: Node, key: String, in range: ClosedRange<Int>, examples: String) -> Int? {
        guard let text = string(node, key: key) else { return nil }
        guard let bytes = Self.byteSize(text.value) else {
            error(node, "'\(key)' must be a size such as \(examples), not '\(text.shown)'")
            return nil
        }
        guard range.contains(bytes) else {
            error(node, "'\(key)' must be between \(sizeText(range.lowerBound)) and \(sizeText(range.upperBound)), not '\(text.shown)'")
            return nil
        }
        return bytes
    }

    package mutating func bool(_ node: Node, key: String) -> Bool? {
        if isPlain(node), let text = scalarText(node) {
            if text == "true" { return true }
            if text == "false" { return false }
        }
        error(node, "'\(key)' must be true or false, not '\(scalarText(node) ?? "a collection")'")
        return nil
    }

    package mutating func path(_ node: Node?, key: String) -> JSONPath? {
        guard let node, let text = string(node, key: key) else { return nil }
        if let path = JSONPath(text.value) { return path }
        let filter = text.value.contains("[") ? " (a filter picks array elements by a member: 'links[rel=next].href')" : ""
        error(node, "'\(key)' must be a dot path such as 'data.list' ('.' for the whole response) or a JSON Pointer such as '/@odata.nextLink', not '\(text.shown)'" + filter)
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

    package static func quoted(_ text: String) -> String { JSONText.quoted(text) }

    static func isJSONNumber(_ text: String) -> Bool {
        guard let document = try? JSONDocument(parsing: Array(text.utf8)) else { return false }
        return document.root.kind == .number
    }

    /// Digits with an optional sign, as `Int(_:)` reads them, whatever their number.
    static func isInteger(_ text: String) -> Bool {
        let digits = text.hasPrefix("-") || text.hasPrefix("+") ? text.utf8.dropFirst() : text.utf8[...]
        return !digits.isEmpty && digits.allSatisfy(\.isASCIIDigit)
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

    /// `123`, `123B`, `500KB`, `64MB`, `1GB` → bytes (units of 1024); `Int.max` for a size
    /// too large to count, which no range of `JobLimits` holds.
    package static func byteSize(_ text: String) -> Int? {
        let units: [(String, Int)] = [("KB", 1 << 10), ("MB", 1 << 20), ("GB", 1 << 30), ("B", 1), ("", 1)]
        let upper = text.uppercased()
        for (suffix, scale) in units where upper.hasSuffix(suffix) {
            let number = upper.dropLast(suffix.count)
            guard !number.isEmpty, number.utf8.allSatisfy(\.isASCIIDigit) else { continue }
            guard let value = Int(number), value <= Int.max / scale else { return .max }
            return value * scale
        }
        return nil
    }

    /// `500ms`, `30s`, `5m`, `12h`, `7d` → seconds; infinity for one too long to count.
    package static func duration(_ text: String) -> Double? {
        let units: [(String, Double, Double)] = [("ms", 1, 1000), ("s", 1, 1), ("m", 60, 1), ("h", 3600, 1), ("d", 86400, 1)]
        for (suffix, scale, divisor) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            guard !number.isEmpty, number.utf8.allSatisfy({ $0.isASCIIDigit || $0 == UInt8(ascii: ".") }),
                  let value = Double(number) else { continue }
            return value * scale / divisor
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
