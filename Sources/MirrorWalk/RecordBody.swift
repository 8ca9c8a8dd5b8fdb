import MirrorJSON
import MirrorModel

/// A body that is not JSON, written as the JSON array of its records, which the walk
/// reads as any other page (records path `.`): ids, `explode`, `columns`, downloads and
/// `incremental` read its records as they read a JSON API's.
struct RecordBody {
    /// Why a body cannot be read as records: nothing of its page is stored.
    struct Problem: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    let format: JobSpec.Format
    /// The job's typed columns whose path is one name: a CSV field of that name is stored
    /// as the column's type reads it.
    private let types: [String: RecordColumn.Kind]
    /// The records path's keys, which an XML body's mapping keeps an array at.
    private let records: [String]

    init(format: JobSpec.Format, columns: [RecordColumn], records: JSONPath = JSONPath(segments: [], description: ".")) {
        self.format = format
        self.records = records.segments.compactMap { segment in
            guard case let .key(name) = segment else { return nil }
            return name
        }
        var types: [String: RecordColumn.Kind] = [:]
        for column in columns {
            guard let type = column.type, column.path.segments.count == 1, case let .key(name) = column.path.segments[0] else { continue }
            types[name] = types[name] ?? type
        }
        self.types = types
    }

    /// `body` as a JSON array of records, or for XML the JSON document its elements map
    /// to; JSON is returned as it is.
    func json(_ body: [UInt8]) throws(Problem) -> [UInt8] {
        switch format {
        case .json: body
        case .ndjson: try lines(body)
        case let .csv(delimiter): try rows(body, delimiter: delimiter)
        case .xml: try document(body)
        }
    }

    /// XML: the document's elements as JSON, the records path an array.
    private func document(_ body: [UInt8]) throws(Problem) -> [UInt8] {
        do {
            return try XMLTree(body).json(records: records)
        } catch {
            throw Problem(description: error.message)
        }
    }

    /// JSON Lines: each line that is not blank must be JSON. CRLF and LF end lines alike.
    /// The lines are joined as an array's elements without being parsed here: the walk
    /// parses the array once, and `badLine` names the line when that fails. A line is only
    /// scanned for what would join into more or fewer elements than one (a comma outside
    /// brackets and strings, brackets that do not close on it), so each line is one record.
    private func lines(_ body: [UInt8]) throws(Problem) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(body.count + 2)
        try Self.forEachLine(of: body) { line, number throws(Problem) in
            guard Self.isOneValue(line) else {
                throw Self.problem(line: line, number: number) ?? Problem(description: "line \(number) holds more than one JSON value")
            }
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out += line
            return true
        }
        out.append(UInt8(ascii: "]"))
        return out
    }

    /// The first line of a JSON Lines body that is not JSON, for a body whose lines,
    /// joined by `lines`, did not parse; nil when every line parses alone.
    func badLine(_ body: [UInt8]) -> Problem? {
        var bad: Problem?
        Self.forEachLine(of: body) { line, number in
            bad = Self.problem(line: line, number: number)
            return bad == nil
        }
        return bad
    }

    /// Calls `visit` with each line of `body` that is not blank and its number (from 1),
    /// while it returns true. CRLF and LF end lines alike; a byte order mark is not text.
    private static func forEachLine<Failure>(of body: [UInt8],
                                             _ visit: (ArraySlice<UInt8>, Int) throws(Failure) -> Bool) throws(Failure) {
        var start = body.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var number = 0
        while start < body.count {
            let end = body[start...].firstIndex(of: UInt8(ascii: "\n")) ?? body.count
            number += 1
            let line = body[start ..< end]
            start = end + 1
            guard line.contains(where: { !isSpace($0) }) else { continue }
            guard try visit(line, number) else { return }
        }
    }

    /// What parsing `line` alone says is wrong with it; nil if it is JSON.
    private static func problem(line: ArraySlice<UInt8>, number: Int) -> Problem? {
        do {
            _ = try line.withUnsafeBytes { try JSONDocument(parsing: $0) }
            return nil
        } catch {
            return Problem(description: "line \(number) is not JSON: \(error)")
        }
    }

    /// Whether `line`, if it is JSON, is one value: no comma outside its brackets and
    /// strings, and every bracket opened on it closed on it, none closed before it opens.
    static func isOneValue(_ line: ArraySlice<UInt8>) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in line {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
                if depth < 0 { return false }
            case UInt8(ascii: ","):
                if depth == 0 { return false }
            default: break
            }
        }
        return depth == 0 && !inString
    }

    /// CSV: the first row names the fields; each row after it is an object of the header's
    /// names, its values strings, or typed where `columns` types a name. A row of more or
    /// fewer fields than the header fails the page.
    private func rows(_ body: [UInt8], delimiter: UInt8) throws(Problem) -> [UInt8] {
        var reader = CSVRows(body, delimiter: delimiter)
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(body.count + body.count / 2)
        do {
            guard let header = try reader.next() else { return Array("[]".utf8) }
            // Each name quoted once, with its colon, and the type its column gives it.
            let names: [(key: [UInt8], type: RecordColumn.Kind?)] = header.map { field in
                let name = reader.text(of: field)
                var key: [UInt8] = []
                JSONText.appendQuoted(name, to: &key)
                key.append(UInt8(ascii: ":"))
                return (key, types[name])
            }
            while let row = try reader.next() {
                guard row.count == header.count else {
                    throw Problem(description: "CSV row \(reader.row) has \(row.count) field\(row.count == 1 ? "" : "s") "
                        + "where the header (row 1) has \(header.count)")
                }
                if out.count > 1 { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "{"))
                for (index, field) in row.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    out += names[index].key
                    Self.append(reader.bytes(of: field), as: names[index].type, to: &out)
                }
                out.append(UInt8(ascii: "}"))
            }
        } catch let problem as CSVRows.Problem {
            throw Problem(description: "CSV " + problem.message)
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem(description: "\(error)")
        }
        out.append(UInt8(ascii: "]"))
        return out
    }

    /// A field's value: a string, or for a typed column null when empty, a JSON number
    /// (its text exact, however many digits) for `integer` and `real`, true or false for
    /// `boolean`. A value its type cannot read stays a string, as the API sent it.
    static func append(_ field: ArraySlice<UInt8>, as type: RecordColumn.Kind?, to out: inout [UInt8]) {
        guard let type else {
            JSONText.appendQuoted(field, to: &out)
            return
        }
        if field.isEmpty {
            out += Array("null".utf8)
            return
        }
        switch type {
        case .integer where isNumber(field, fraction: false), .real where isNumber(field, fraction: true):
            out += field
        case .boolean where field.elementsEqual("true".utf8) || field.elementsEqual("false".utf8):
            out += field
        default:
            JSONText.appendQuoted(field, to: &out)
        }
    }

    /// A JSON number: `-`, digits without a leading zero, and with `fraction` a fraction
    /// and an exponent.
    static func isNumber(_ text: ArraySlice<UInt8>, fraction: Bool) -> Bool {
        var index = text.startIndex
        func digits() -> Int {
            let start = index
            while index < text.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[index]) { index += 1 }
            return index - start
        }
        if index < text.endIndex, text[index] == UInt8(ascii: "-") { index += 1 }
        let first = index
        let count = digits()
        guard count > 0, count == 1 || text[first] != UInt8(ascii: "0") else { return false }
        if fraction {
            if index < text.endIndex, text[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { return false }
            }
            if index < text.endIndex, text[index] | 0x20 == UInt8(ascii: "e") {
                index += 1
                if index < text.endIndex, text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { return false }
            }
        }
        return index == text.endIndex
    }

    static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
