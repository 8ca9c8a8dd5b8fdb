/// Byte counts as job files write them (`64MB`) and as messages print them.
package enum ByteSize {
    package static func text(_ bytes: Int) -> String {
        for (unit, size) in [("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)] where bytes >= size && bytes % size == 0 {
            return "\(bytes / size) \(unit)"
        }
        return "\(bytes) bytes"
    }

    /// `512 B`, `85.3 KB`, `3.1 MB`: for progress, not for limits.
    package static func approximate(_ bytes: Int) -> String {
        for (unit, size) in [("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)] where bytes >= size {
            let value = Double(bytes) / Double(size)
            return "\((value * 10).rounded() / 10) \(unit)"
        }
        return "\(bytes) B"
    }
}
