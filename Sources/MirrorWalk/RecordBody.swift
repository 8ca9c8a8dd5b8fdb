import MirrorJSON
import MirrorModel

/// A body that is not JSON, written as the JSON array of its records, which the walk
/// reads as any other page (records path `.`): ids, `explode`, `columns`, downloads and
/// `incremental` read its records as they read a JSON API's.
struct RecordBody {
    /// Why a body cannot be read as records: nothing of its page is stored.
    struct Problem: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    let format: JobSpec.Format

    init(format: JobSpec.Format) {
        self.format = format
    }

    /// `body` as a JSON array of records; JSON is returned as it is.
    func json(_ body: [UInt8]) throws(Problem) -> [UInt8] {
        switch format {
        case .json: body
        case .ndjson: try lines(body)
        }
    }

    /// JSON Lines: each line that is not blank must be JSON. CRLF and LF end lines alike.
    private func lines(_ body: [UInt8]) throws(Problem) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(body.count + 2)
        var start = body.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var number = 0
        while start < body.count {
            let end = body[start...].firstIndex(of: UInt8(ascii: "\n")) ?? body.count
            number += 1
            let line = body[start ..< end]
            start = end + 1
            guard line.contains(where: { !Self.isSpace($0) }) else { continue }
            do {
                _ = try line.withUnsafeBytes { try JSONDocument(parsing: $0) }
            } catch {
                throw Problem(description: "line \(number) is not JSON: \(error)")
            }
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out += line
        }
        out.append(UInt8(ascii: "]"))
        return out
    }

    static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
