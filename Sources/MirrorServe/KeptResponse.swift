import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import MirrorReplay
@_spi(CustomByteBufferAllocator) import NIOCore

/// A replayed page's answer as `PageCache` keeps it for `mirror serve`: its headers as
/// Hummingbird sends them, and its body in one `ByteBuffer` that every answer shares, never
/// copied to be sent (Hummingbird 2 writes buffers only: no file region, so no `sendfile`),
/// and sent with its head in one write.
struct KeptResponse: KeptAnswer {
    let fields: HTTPFields
    /// The body, in a buffer of its own size (see `buffer`).
    let body: ByteBuffer

    init(status: Int, headers: [(String, String)], body: [UInt8]) {
        fields = HTTPFields(setting: headers)
        self.body = Self.buffer(body)
    }

    var heldBytes: Int {
        body.capacity + fields.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count }
    }

    /// The answer with `status`, or 304 with its headers but `Content-Type` when `notModified`.
    func response(status: Int, notModified: Bool) -> Response {
        guard !notModified else {
            var fields = fields
            fields[.contentType] = nil
            return Response(status: .notModified, headers: fields, body: ResponseBody())
        }
        return Response(status: .init(code: status), headers: fields, body: ResponseBody(byteBuffer: body))
    }

    /// `bytes` in a buffer whose capacity is their count. NIO gives a buffer it allocates
    /// a power of two of capacity, so a page of 85 KB would hold 128 KB; this one is
    /// allocated here, at the size of the page, and handed to NIO, which frees it
    /// (`free`, as its default allocator does) when the last answer sending it is done.
    static func buffer(_ bytes: [UInt8]) -> ByteBuffer {
        guard !bytes.isEmpty, let memory = malloc(bytes.count) else { return ByteBuffer(bytes: bytes) }
        let raw = UnsafeMutableRawBufferPointer(start: memory, count: bytes.count)
        raw.copyBytes(from: bytes)
        return ByteBuffer(takingOwnershipOf: raw, allocator: ByteBufferAllocator())
    }
}

extension HTTPFields {
    /// `headers` set in their order: a later one of a name replaces an earlier one; a name
    /// HTTP does not allow is left out.
    init(setting headers: [(String, String)]) {
        self.init()
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { self[name] = value }
        }
    }
}
