import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import MirrorFiles
import MirrorReplay
@_spi(CustomByteBufferAllocator) import NIOCore

/// A replayed page's answer as `PageCache` keeps it for `mirror serve`: its headers as
/// Hummingbird sends them, and its body in a scratch file of the temporary folder
/// (`ScratchSpace`), which the kernel keeps in its file cache rather than serve in its
/// memory, sent from there with `sendfile` (see `SentFiles`), or read back for a connection
/// that encrypts (TLS). Where no scratch file can be written, the body is kept in memory, in
/// one `ByteBuffer` that every answer shares, never copied to be sent.
struct KeptResponse: KeptAnswer {
    enum Body: Sendable {
        case scratch(ScratchBytes)
        /// In a buffer of its own size (see `buffer`).
        case memory(ByteBuffer)
    }

    let fields: HTTPFields
    let body: Body

    /// Where every server of the process keeps its pages' bodies: `TMPDIR`, else /tmp.
    static let scratch = ScratchSpace(folder: ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp")

    init(status: Int, headers: [(String, String)], body: [UInt8]) {
        fields = HTTPFields(setting: headers)
        let held = body.isEmpty ? nil : body.withUnsafeBytes { Self.scratch.hold($0) }
        self.body = held.map(Body.scratch) ?? .memory(Self.buffer(body))
    }

    var heldBytes: Int {
        let bytes = switch body {
        case let .scratch(held): held.range.count
        case let .memory(buffer): buffer.capacity
        }
        return bytes + fields.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count }
    }

    /// The answer with `status`, or 304 with its headers but `Content-Type` when
    /// `notModified`, to send on `channel`, its body by `sends` when there is one (no TLS);
    /// its headers alone for a HEAD request (`head`).
    func response(status: Int, notModified: Bool, head: Bool, channel: any Channel, sends: FileSends?) -> Response {
        if let (status, fields) = bodiless(status: status, notModified: notModified, head: head, channel: channel, sends: sends) {
            return Response(status: status, headers: fields, body: ResponseBody())
        }
        switch body {
        case let .memory(buffer):
            return Response(status: .init(code: status), headers: fields, body: ResponseBody(byteBuffer: buffer))
        case let .scratch(held):
            let body = ResponseBody(contentLength: held.range.count) { writer in
                let bytes = try await MirrorServer.blocking {
                    try ByteBuffer.read(held.range.count) { buffer throws(FileError) in try held.read(into: buffer) }
                }
                try await writer.write(bytes)
                try await writer.finish(nil)
            }
            return Response(status: .init(code: status), headers: fields, body: body)
        }
    }

    /// The answer's status and fields when they are all that is written: a 304, a HEAD
    /// request's headers, or a body in the scratch file, which `sends` writes after them
    /// (`FileSends`). Nil when the body is written as bytes: kept in memory, or read for
    /// a connection that encrypts (no `sends`).
    func bodiless(status: Int, notModified: Bool, head: Bool, channel: any Channel,
                  sends: FileSends?) -> (HTTPResponse.Status, HTTPFields)? {
        guard !notModified else {
            var fields = fields
            fields[.contentType] = nil
            return (.notModified, fields)
        }
        guard case let .scratch(held) = body else { return nil }
        if head {
            var fields = fields
            fields[.contentLength] = String(held.range.count)
            return (.init(code: status), fields)
        }
        guard let sends else { return nil }
        let pending = FileSends.Pending(descriptor: held.file.descriptor, range: held.range, holder: held)
        return (.init(code: status), sends.fields(fields, sending: pending, on: channel))
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
