import Foundation
package import MirrorFiles
import MirrorJSON
import MirrorModel
package import MirrorStore

/// Streams stored records out of a table: NDJSON, a JSON array or CSV.
package struct Exporter: Sendable {
    package enum Format: String, Sendable, CaseIterable { case ndjson, json, csv }

    package struct Options: Sendable {
        /// Which records, in what order.
        package var selection: RecordSelection
        package var format: Format = .ndjson
        /// Rewrite the URLs of downloaded files to their paths in the output folder.
        package var localFiles = false
        package init(table: String) { selection = RecordSelection(table: table) }
    }

    package let database: String
    package let options: Options

    package init(database: String, options: Options) {
        self.database = database
        self.options = options
    }

    /// Writes every selected record to `sink`.
    package func export(to sink: inout OutputSink) throws {
        var selection = options.selection
        selection.withColumns = options.format == .csv
        try RecordReader(database: database).read(selection) { cursor in
            var localFiles = options.localFiles && cursor.hasFiles ? LocalFiles() : nil
            switch options.format {
            case .ndjson:
                try each(&cursor, localFiles: &localFiles) { record in
                    sink.write(record.record)
                    sink.write(byte: 0x0A)
                }
            case .json:
                var first = true
                sink.write(byte: UInt8(ascii: "["))
                try each(&cursor, localFiles: &localFiles) { record in
                    sink.write(Array((first ? "\n" : ",\n").utf8))
                    sink.write(record.record)
                    first = false
                }
                sink.write(Array((first ? "]\n" : "\n]\n").utf8))
            case .csv:
                try writeCSV(&cursor, localFiles: &localFiles, to: &sink)
            }
            try sink.flush()
        }
    }

    /// Hands each record to `body`, its downloaded URLs rewritten when `localFiles` is set.
    func each(_ cursor: inout RecordCursor, localFiles: inout LocalFiles?, _ body: (StoredRecord) throws -> Void) throws {
        cursor.rewind()
        while let record = try cursor.next() {
            if localFiles != nil {
                let lookup = cursor.filePath(for:)
                try localFiles!.rewrite(record.record, lookup: lookup) { rewritten in
                    try body(StoredRecord(account: record.account, id: record.id, record: rewritten))
                }
            } else {
                try body(record)
            }
        }
    }

    // MARK: CSV

    /// A header row (mirror's account and id columns, then every top-level field in order
    /// of first appearance, every name unique), then one row per record; nested values as
    /// JSON text. A table with generated columns (a job's `columns`) gives those instead of
    /// the fields: account, id, then each column, a NULL as an empty cell.
    func writeCSV(_ cursor: inout RecordCursor, localFiles: inout LocalFiles?, to sink: inout OutputSink) throws {
        if !cursor.columns.isEmpty {
            try writeColumns(&cursor, to: &sink)
            return
        }
        var columns: [String] = []
        var known: Set<String> = []
        var noRewrite: LocalFiles?
        try each(&cursor, localFiles: &noRewrite) { record in
            guard let document = try? JSONDocument(parsing: UnsafeRawBufferPointer(record.record)) else { return }
            for member in document.root.members where known.insert(member.key).inserted {
                columns.append(member.key)
            }
        }
        // Every column name is unique, compared without case as SQLite compares them: the
        // record's own fields keep their names, and mirror's account and id columns take a
        // leading underscore for each field they would clash with (`id` → `_id` → `__id`).
        let taken = Set(columns.map { $0.lowercased() })
        func unique(_ name: String) -> String {
            var name = name
            while taken.contains(name.lowercased()) { name = "_" + name }
            return name
        }
        var line: [UInt8] = []
        Self.appendRow([unique("account"), unique("id")] + columns, to: &line)
        sink.write(line)
        try each(&cursor, localFiles: &localFiles) { record in
            line.removeAll(keepingCapacity: true)
            var cells = [String(decoding: record.account, as: UTF8.self), String(decoding: record.id, as: UTF8.self)]
            let document = try? JSONDocument(parsing: UnsafeRawBufferPointer(record.record))
            for column in columns {
                guard let value = document?.root[column] else { cells.append(""); continue }
                switch value.kind {
                case .null: cells.append("")
                case .string: cells.append(value.stringValue ?? "")
                default: cells.append(value.rawText)
                }
            }
            Self.appendRow(cells, to: &line)
            sink.write(line)
        }
    }

    /// The CSV of a table with generated columns: their values as SQLite gives them, so a
    /// column's type and its rule for values of another type hold in the export too.
    private func writeColumns(_ cursor: inout RecordCursor, to sink: inout OutputSink) throws {
        var line: [UInt8] = []
        Self.appendRow(["account", "id"] + cursor.columns.map(\.name), to: &line)
        sink.write(line)
        let count = cursor.columns.count
        cursor.rewind()
        while let record = try cursor.next() {
            line.removeAll(keepingCapacity: true)
            var cells = [String(decoding: record.account, as: UTF8.self), String(decoding: record.id, as: UTF8.self)]
            for index in 0..<count {
                cells.append(cursor.column(index) ?? "")
            }
            Self.appendRow(cells, to: &line)
            sink.write(line)
        }
    }

    private static func needsQuoting(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: ",") || byte == UInt8(ascii: "\"") || byte == 0x0A || byte == 0x0D
    }

    static func appendRow(_ cells: [String], to line: inout [UInt8]) {
        for (index, cell) in cells.enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            let needsQuotes = cell.utf8.contains(where: needsQuoting)
            if needsQuotes {
                line.append(0x22)
                for byte in cell.utf8 {
                    if byte == 0x22 { line.append(0x22) }
                    line.append(byte)
                }
                line.append(0x22)
            } else {
                line.append(contentsOf: cell.utf8)
            }
        }
        line.append(contentsOf: [0x0D, 0x0A])
    }
}
