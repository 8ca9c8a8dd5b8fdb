/// The `columns:` block `mirror infer` prints: a comment on each path, in order of first
/// appearance, and after it the path's column, as the job file takes it; then, when the
/// records hold lists, an `explode:` block with one for each.
import Foundation
import MirrorJSON
import MirrorModel

extension ColumnInference {
    /// The block for `job`'s records; `sample` as `--sample` gave it.
    func text(job: JobSpec, sample: Int?) -> String {
        let read = sample == nil ? Self.counted(records) : "the first \(records == 1 ? "record" : Self.counted(records)) (--sample \(sample!))"
        var lines = ["# columns inferred from \(read) of job '\(Self.comment(job.name))' (table '\(job.table)'); "
            + "paths in order of first appearance"]
        var entries: [String] = []
        var lists: [String] = []
        var taken = Set(RecordColumn.tableColumns)
        var listNames: Set<String> = []
        var proposed = 0
        var left = 0
        let idKeys = job.id.segments.map { segment -> String? in if case let .key(key) = segment { key } else { nil } }
        for seen in paths where seen.scalars > 0 || seen.arrays > 0 {
            let path = Self.pathText(seen.keys)
            var line = "# \(Self.comment(path ?? Self.pointer(seen.keys))): \(seen.types); \(presence(seen))"
            let (type, mixed) = seen.kind
            let time = seen.strings > 0 && seen.times == seen.strings
            if time { line += "; looks like a time" }
            // A time differs from record to record too: it is no id.
            if !time, seen.distinct != nil, seen.present == records, records > 1, (seen.strings == 0) != (seen.integers == 0) {
                line += "; looks like an id (a different value in every record)"
            }
            if seen.bigIntegers > 0 {
                line += "; \(grouped(seen.bigIntegers)) past 64 bits (the column keeps the digits, as text)"
            }
            let problem: String?
            if seen.keys.map(Optional.some) == idKeys {
                problem = "the record's id (the job's 'id'): not proposed"
            } else if let key = seen.keys.first(where: { RecordColumn.arrayIndex($0) != nil }) {
                problem = "the key '\(Self.comment(key))' would read as an array index: not proposed"
            } else if path == nil {
                problem = "no record path names it: not proposed"
            } else if case let .failure(.unquotable(key)) = RecordColumn.sqlitePath(JSONPath(path!)!) {
                problem = "SQLite's JSON paths cannot name the key '\(Self.comment(key))': not proposed"
            } else if seen.scalars == 0, seen.objects == 0 {
                problem = "a list: proposed under 'explode:' below"
                lists += ["  " + line, "  \(Self.yaml(Self.columnName(seen.keys, taken: &listNames))): \(Self.yaml(path!))"]
            } else {
                problem = nil
            }
            if let problem {
                entries += ["  " + line + "; " + problem]
                continue
            }
            if proposed == Self.maximumColumns {
                left += 1
                continue
            }
            proposed += 1
            if mixed {
                line += "; mixed types: no type (the value as the record has it)"
            } else if type == nil {
                line += "; only null: no type"
            }
            let name = Self.columnName(seen.keys, taken: &taken)
            let value = type.map { "{path: \(Self.yaml(path!)), type: \($0.rawValue)}" } ?? Self.yaml(path!)
            entries += ["  " + line, "  \(Self.yaml(name)): \(value)"]
        }
        if left > 0 {
            entries += ["  # and \(grouped(left)) more paths, not proposed: at most \(Self.maximumColumns) columns are"]
        }
        lines.append(proposed == 0 ? "columns: {}" : "columns:")
        if proposed == 0 {
            lines += entries.map { String($0.dropFirst(2)) }
        } else {
            lines += entries
        }
        if !lists.isEmpty {
            lines += ["explode:"] + lists
        }
        return lines.joined(separator: "\n")
    }

    /// `present in 97.3% of 95,005 records`: 100% only when in all of them.
    private func presence(_ seen: Seen) -> String {
        let share: String
        if seen.present == records {
            share = "100%"
        } else {
            let percent = min(max(Double(seen.present) * 100 / Double(records), 0.1), 99.9)
            share = String(format: "%.1f%%", percent)
        }
        return "present in \(share) of \(Self.counted(records))"
    }

    /// `1 record`, `95,005 records`.
    static func counted(_ records: Int) -> String {
        records == 1 ? "1 record" : "\(grouped(records)) records"
    }

    /// The path of `keys` as a job file writes it: a dot path, or a JSON Pointer when a key
    /// holds a dot, a bracket or a slash at the start, is `*` or empty; nil when neither
    /// reads back as these keys, or when the text holds `${` (the loader reads it as a
    /// variable).
    static func pathText(_ keys: [String]) -> String? {
        let dotted = keys.joined(separator: ".")
        let plain = !dotted.hasPrefix("/") && keys.allSatisfy {
            !$0.isEmpty && $0 != "*" && !$0.contains(".") && !$0.contains("[") && !$0.contains("]")
        }
        let text = plain ? dotted : pointer(keys)
        guard !text.contains("${"), let path = JSONPath(text), path.segments == keys.map({ .key($0) }) else { return nil }
        return text
    }

    /// `/a b/c.d`: RFC 6901, `~` as `~0`, `/` as `~1`.
    static func pointer(_ keys: [String]) -> String {
        keys.map { "/" + $0.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1") }.joined()
    }

    /// The column of a path: its keys joined by `_`, every character but `[A-Za-z0-9_]`
    /// made `_`, a leading digit given a `_` before it; a name `taken` already (the table's
    /// own columns, earlier columns; case ignored) gets `_2`, or `_3`, and so on.
    static func columnName(_ keys: [String], taken: inout Set<String>) -> String {
        var name = String(keys.joined(separator: "_").map { character -> Character in
            character.isASCII && (character.isLetter || character.isNumber || character == "_") ? character : "_"
        })
        if name.isEmpty || name.first!.isNumber { name = "_" + name }
        var candidate = name
        var suffix = 2
        while taken.contains(candidate.lowercased()) {
            candidate = "\(name)_\(suffix)"
            suffix += 1
        }
        taken.insert(candidate.lowercased())
        return candidate
    }

    /// `text` as a YAML scalar: plain when it cannot read as anything but this string,
    /// else in double quotes.
    static func yaml(_ text: String) -> String {
        let safe = text.unicodeScalars.allSatisfy {
            ("a" ... "z").contains($0) || ("A" ... "Z").contains($0) || ("0" ... "9").contains($0) || "_./-".unicodeScalars.contains($0)
        }
        let words: Set<String> = ["true", "false", "yes", "no", "on", "off", "y", "n", "null"]
        if safe, let first = text.unicodeScalars.first, first == "_" || first == "/" || ("a" ... "z").contains(first)
            || ("A" ... "Z").contains(first), !words.contains(text.lowercased()) {
            return text
        }
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                quoted += String(format: "\\x%02X", scalar.value)
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }

    /// `text` on one comment line: control characters as `\xNN`.
    static func comment(_ text: String) -> String {
        var shown = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                shown += String(format: "\\x%02X", scalar.value)
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }
}

/// `95,005`: digits in groups of three.
func grouped(_ number: Int) -> String {
    let digits = String(number.magnitude)
    var text = ""
    for (offset, digit) in digits.enumerated() {
        if offset > 0, (digits.count - offset) % 3 == 0 { text += "," }
        text.append(digit)
    }
    return number < 0 ? "-" + text : text
}
