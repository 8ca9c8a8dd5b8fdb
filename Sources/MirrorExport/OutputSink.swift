import Foundation

/// Buffered writes to a file descriptor, in large blocks.
package struct OutputSink {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private let capacity = 1 << 20

    package init(descriptor: Int32) {
        self.descriptor = descriptor
        buffer.reserveCapacity(capacity)
    }

    package mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= capacity { try? flush() }
    }

    package mutating func write(_ bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= capacity { try? flush() }
    }

    package mutating func write(byte: UInt8) {
        buffer.append(byte)
    }

    package struct WriteError: Error, CustomStringConvertible {
        package let description: String
    }

    package private(set) var failed: String?

    /// Writes out the buffer; remembers the first failure (a closed pipe, a full disk).
    package mutating func flush() throws {
        defer { buffer.removeAll(keepingCapacity: true) }
        if let failed { throw WriteError(description: failed) }
        var offset = 0
        while offset < buffer.count {
            let written = buffer.withUnsafeBytes { raw in
                Foundation.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                failed = String(cString: strerror(errno))
                throw WriteError(description: failed!)
            }
            offset += written
        }
    }
}
