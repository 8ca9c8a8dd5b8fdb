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
        do throws(FileError) {
            try FileSystem.write(buffer, to: descriptor)
        } catch {
            failed = error.reason
            throw WriteError(description: error.reason)
        }
    }
}
