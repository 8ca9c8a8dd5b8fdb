/// Rewrites, inside exported records, every string that is the URL of a downloaded file
/// to that file's path relative to the output folder (`files/3f/3fa…c2.jpg`).
import MirrorHTTP
import MirrorJobFile
import MirrorJSON
import MirrorModel

struct LocalFiles {
    /// The rewritten record, reused from call to call.
    private var scratch: [UInt8] = []

    /// Calls `body` with `record`, each URL that `lookup` knows the path of replaced by it.
    mutating func rewrite(_ record: UnsafeBufferPointer<UInt8>, lookup: (String) throws -> String?,
                          _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        guard let document = try? JSONDocument(parsing: UnsafeRawBufferPointer(record)) else {
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
                  let path = try lookup(url) else { continue }
            scratch.append(contentsOf: document.bytes[copied ..< Int(node.start)])
            JSONText.appendQuoted(path, to: &scratch)
            copied = Int(node.end)
        }
        if copied == 0 { return try body(record) }
        scratch.append(contentsOf: document.bytes[copied...])
        try scratch.withUnsafeBufferPointer(body)
    }
}
