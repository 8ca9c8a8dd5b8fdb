/// Applies a job's `drop:` and `hash:` to one record: its text written again without the
/// dropped values and with each hashed value replaced by the lowercase hex SHA-256 of
/// the salt, a 0 byte and the value's canonical JSON text, as a JSON string.
import Crypto
import MirrorJSON
import MirrorModel

struct RecordRedactor: Sendable {
    let redaction: RecordRedaction

    /// Appends `record` as it is to be stored.
    func append(_ record: JSONValue, to out: inout [UInt8]) {
        record.appendEdited(dropping: redaction.drop, replacing: redaction.hash, with: hash, to: &out)
    }

    /// `"<64 lowercase hex digits>"`: the SHA-256 of the salt, a 0 byte and the value's
    /// canonical text. Equal values give equal hashes, however the API escaped them.
    func hash(_ value: JSONValue) -> [UInt8] {
        var input = redaction.salt
        input.append(0)
        value.appendCanonical(to: &input)
        var out: [UInt8] = [UInt8(ascii: "\"")]
        out += Array(Hex.string(Array(SHA256.hash(data: input))).utf8)
        out.append(UInt8(ascii: "\""))
        return out
    }
}
