/// A published generation's id, `20261127T101500.123Z-3fa4c2e1`: the UTC millisecond it was
/// started, then 32 random bits. Fixed width, so text order is time order (a shard's next
/// publish always sorts after its last); two publishes in one millisecond differ by their
/// random part.
package import Foundation
import MirrorModel

package enum GenerationID {
    /// A new id for a generation started at `date`.
    package static func make(at date: Date) -> String {
        // `2026-11-27T10:15:00.123Z` without its dashes and colons.
        let time = Timestamp.string(date).filter { $0 != "-" && $0 != ":" }
        return time + "-" + String(format: "%08x", UInt32.random(in: .min ... .max))
    }

    /// Whether `text` is such an id: a folder of a listing that is not one was not made by a publish.
    package static func isID(_ text: Substring) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 29, bytes[8] == UInt8(ascii: "T"), bytes[15] == UInt8(ascii: "."),
              bytes[19] == UInt8(ascii: "Z"), bytes[20] == UInt8(ascii: "-") else { return false }
        let digit = UInt8(ascii: "0")...UInt8(ascii: "9")
        let letter = UInt8(ascii: "a")...UInt8(ascii: "f")
        return (bytes[0..<8] + bytes[9..<15] + bytes[16..<19]).allSatisfy(digit.contains)
            && bytes[21...].allSatisfy { digit.contains($0) || letter.contains($0) }
    }
}
