/// Streams a table's change feed since a mark (`export --changes-since`): one JSON object
/// per changed key, `{"seq":…,"op":"upsert","account":…,"id":…,"record":…}` (with
/// `"parent_id"` before the record in a child job's table) or
/// `{"seq":…,"op":"delete","account":…,"id":…}`, in sequence order. NDJSON by default;
/// `json` wraps them as `{"changes":[…],"feed":…,"changes_through":N}`, the mark on the last line.
package import MirrorFiles
import MirrorJSON
import MirrorModel
package import MirrorStore

package struct ChangeExporter: Sendable {
    package struct Options: Sendable {
        package var table: String
        /// The reader's mark: changes after it.
        package var since: Int
        /// The feed the mark came from, when the reader knows it: another one is refused.
        package var feed: String?
        package var account: String?
        package var limit: Int?
        /// `ndjson` or `json`.
        package var format: Exporter.Format = .ndjson
        /// Rewrite the URLs of downloaded files to their paths in the output folder.
        package var localFiles = false

        package init(table: String, since: Int) {
            self.table = table
            self.since = since
        }
    }

    package let database: String
    package let options: Options

    package init(database: String, options: Options) {
        self.database = database
        self.options = options
    }

    /// Writes the changes to `sink`; the mark to ask from next.
    package func export(to sink: inout OutputSink) throws -> ChangeFeed.Mark {
        let mark = try export { sink.write($0) }
        try sink.flush()
        return mark
    }

    /// Hands the changes' text to `emit`, piece by piece; the mark to ask from next.
    package func export(_ emit: (UnsafeBufferPointer<UInt8>) -> Void) throws -> ChangeFeed.Mark {
        func write(_ bytes: [UInt8]) { bytes.withUnsafeBufferPointer(emit) }
        let json = options.format == .json
        var line: [UInt8] = []
        var localFiles = options.localFiles ? LocalFiles() : nil
        if json { write(Array("{\"changes\":[".utf8)) }
        var first = true
        let mark = try ChangeFeed(database: database).read(
            table: options.table, since: options.since, feed: options.feed, account: options.account, limit: options.limit
        ) { change, filePath in
            line.removeAll(keepingCapacity: true)
            if json { line.append(contentsOf: (first ? "\n" : ",\n").utf8) }
            first = false
            line.append(contentsOf: #"{"seq":"#.utf8)
            Self.appendDecimal(change.seq, to: &line)
            line.append(contentsOf: (change.record == nil ? #","op":"delete","account":"# : #","op":"upsert","account":"#).utf8)
            JSONText.appendQuoted(change.account, to: &line)
            line.append(contentsOf: ",\"id\":".utf8)
            JSONText.appendQuoted(change.id, to: &line)
            guard let record = change.record else {
                line.append(UInt8(ascii: "}"))
                if !json { line.append(0x0A) }
                return write(line)
            }
            if let parentID = change.parentID {
                line.append(contentsOf: ",\"parent_id\":".utf8)
                JSONText.appendQuoted(parentID, to: &line)
            }
            line.append(contentsOf: ",\"record\":".utf8)
            write(line)
            let close: [UInt8] = json ? [UInt8(ascii: "}")] : [UInt8(ascii: "}"), 0x0A]
            if var rewriter = localFiles {
                try rewriter.rewrite(record, lookup: filePath) { emit($0) }
                localFiles = rewriter
            } else {
                emit(record)
            }
            write(close)
        }
        if json {
            write(Array("\(first ? "" : "\n")],\n\"feed\":\"\(mark.feed)\",\"changes_through\":\(mark.through)}\n".utf8))
        }
        return mark
    }

    /// Appends `value` in decimal digits, as JSON writes an integer.
    static func appendDecimal(_ value: Int, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var rest = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            out.append(contentsOf: digits[start...])
        }
    }
}
