/// `mirror infer`: reads the records a job stored and proposes its `columns:` — one per
/// leaf path, typed by what the records hold — as YAML the job file takes, with a comment
/// on each path saying what was seen.
import Foundation
import MirrorJobFile
import MirrorJSON
package import MirrorModel
import MirrorStore

package struct ColumnInference: Sendable {
    /// Proposed columns at most; the paths after them are counted in one comment.
    package static let maximumColumns = 200
    /// A string longer than this (in bytes) is no id.
    static let maximumIDLength = 64

    /// What the records hold at one path.
    struct Seen: Sendable {
        let keys: [String]
        var present = 0
        var strings = 0
        var integers = 0
        var reals = 0
        var booleans = 0
        var nulls = 0
        var objects = 0
        var arrays = 0
        /// Strings the `time` type keeps.
        var times = 0
        /// Integers past 64 bits.
        var bigIntegers = 0
        /// Hashes of the values while every one differs and is an integer or a short string;
        /// nil after a repeat or any other value.
        var distinct: Set<Int>? = []

        var scalars: Int { strings + integers + reals + booleans + nulls }

        /// `string 3, integer 1`, in a fixed order.
        var types: String {
            [("string", strings), ("integer", integers), ("real", reals), ("boolean", booleans), ("object", objects),
             ("array", arrays), ("null", nulls)].filter { $0.1 > 0 }.map { "\($0.0) \(grouped($0.1))" }.joined(separator: ", ")
        }

        /// The column's type, nil for none; `mixed` when the values disagree.
        var kind: (type: RecordColumn.Kind?, mixed: Bool) {
            let kinds = [strings, integers + reals, booleans, objects, arrays].filter { $0 > 0 }.count
            if kinds != 1 { return (nil, kinds > 1) }
            if strings > 0 { return (times == strings ? .time : .text, false) }
            if reals > 0 { return (.real, false) }
            if integers > 0 { return (.integer, false) }
            if booleans > 0 { return (.boolean, false) }
            return (nil, true)
        }
    }

    /// Paths in order of first appearance.
    private(set) var paths: [Seen] = []
    private var index: [[String]: Int] = [:]
    /// Records read.
    package private(set) var records = 0

    init() {}

    /// Counts what `record` holds at each path: every member of every object, not inside
    /// arrays; of duplicate keys, the first (as SQLite's `json_extract` reads).
    mutating func add(_ record: JSONValue) {
        records += 1
        guard record.kind == .object else { return }
        visitMembers(of: record, under: [])
    }

    private mutating func visitMembers(of object: JSONValue, under keys: [String]) {
        var seen: Set<String> = []
        for member in object.members where seen.insert(member.key).inserted {
            visit(member.value, at: keys + [member.key])
        }
    }

    private mutating func visit(_ value: JSONValue, at keys: [String]) {
        let slot: Int
        if let known = index[keys] {
            slot = known
        } else {
            slot = paths.count
            index[keys] = slot
            paths.append(Seen(keys: keys))
        }
        paths[slot].present += 1
        var idValue: String?
        switch value.kind {
        case .object:
            paths[slot].objects += 1
            visitMembers(of: value, under: keys)
        case .array:
            paths[slot].arrays += 1
        case .string:
            let text = value.stringValue ?? ""
            paths[slot].strings += 1
            if RecordColumn.isTime(text) { paths[slot].times += 1 }
            if text.utf8.count <= Self.maximumIDLength { idValue = "s" + text }
        case .number:
            let text = value.rawText
            if text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) {
                paths[slot].reals += 1
            } else {
                paths[slot].integers += 1
                if Int64(text) == nil { paths[slot].bigIntegers += 1 }
                idValue = "i" + text
            }
        case .bool:
            paths[slot].booleans += 1
        case .null:
            paths[slot].nulls += 1
        }
        if let idValue, paths[slot].distinct != nil {
            if !paths[slot].distinct!.insert(idValue.hashValue).inserted { paths[slot].distinct = nil }
        } else {
            paths[slot].distinct = nil
        }
    }

    // MARK: Reading a job's records

    /// The job of `file` named `name`; with no name, its only job.
    package static func job(_ name: String?, in file: JobFile) throws(UsageError) -> JobSpec {
        let names = file.jobs.map(\.name)
        guard let name else {
            guard file.jobs.count == 1 else {
                throw UsageError("\(file.path) has \(file.jobs.count) jobs: name one with --job (\(names.joined(separator: ", ")))")
            }
            return file.jobs[0]
        }
        guard let job = file.jobs.first(where: { $0.name == name }) else {
            let hint = closestKey(to: name, in: names).map { " (did you mean '\($0)'?)" } ?? ""
            throw UsageError("no job named '\(name)' in \(file.path)\(hint)")
        }
        return job
    }

    /// Reads the records `job` stored in `folder` — all, or the first `sample` in walk
    /// order — and gives the `columns:` block for them. Throws `RecordReader.Failure`,
    /// naming the job and the folder, when the folder or the table is not there.
    package static func infer(job: JobSpec, folder: String, sample: Int? = nil) throws -> String {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw RecordReader.Failure(description: "job '\(job.name)': no output folder '\(folder)': run `mirror run` first, "
                + "or name the folder with --output")
        }
        let database = (folder as NSString).appendingPathComponent(job.database)
        guard FileManager.default.fileExists(atPath: database), RecordReader.holds(table: job.table, database: database) else {
            throw RecordReader.Failure(description: "job '\(job.name)' has stored nothing in '\(folder)': no table '\(job.table)' "
                + "in '\(job.database)'; run `mirror run` first, or name the folder with --output")
        }
        var selection = RecordSelection(table: job.table)
        selection.limit = sample
        var inference = ColumnInference()
        try RecordReader(database: database).read(selection) { cursor in
            while let stored = try cursor.next() {
                // A stored record was parsed when its page was: it parses again.
                guard let document = try? JSONDocument(parsing: UnsafeRawBufferPointer(stored.record)) else { continue }
                inference.add(document.root)
            }
        }
        return inference.text(job: job, sample: sample)
    }
}
