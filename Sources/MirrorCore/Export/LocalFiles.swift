import GRDB

/// Rewrites, inside exported records, every string that is the URL of a downloaded file
/// to that file's path relative to the output folder (`files/3f/3fa…c2.jpg`).
struct LocalFiles {
    private let lookup: Statement?
    /// The rewritten record, reused from call to call.
    private var scratch: [UInt8] = []

    /// Nil lookup: the database has no downloads, nothing is rewritten.
    init(db: Database) throws {
        lookup = try db.tableExists(StoreSchema.files)
            ? db.makeStatement(sql: "SELECT path FROM \(StoreSchema.files) WHERE url = ? AND status = 'ok'")
            : nil
    }

    /// Calls `body` with `record`, its downloaded URLs replaced.
    mutating func rewrite(_ record: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        guard let lookup, let document = try? JSONDocument(parsing: UnsafeRawBufferPointer(record)) else {
            return try body(record)
        }
        scratch.removeAll(keepingCapacity: true)
        var copied = 0
        for index in document.nodes.indices {
            let node = document.nodes[index]
            // Cheap test first: only a string that starts like an http(s) URL is looked up.
            guard node.kind == .string, node.end - node.start > 9,
                  document.bytes[Int(node.start) + 1] | 0x20 == UInt8(ascii: "h"),
                  let url = JSONValue(document: document, index: index).stringValue,
                  HTTPClient.isHTTP(url),
                  let path = try String.fetchOne(lookup, arguments: [url]) else { continue }
            scratch.append(contentsOf: document.bytes[copied ..< Int(node.start)])
            JSONText.appendQuoted(path, to: &scratch)
            copied = Int(node.end)
        }
        if copied == 0 { return try body(record) }
        scratch.append(contentsOf: document.bytes[copied...])
        try scratch.withUnsafeBufferPointer(body)
    }
}
