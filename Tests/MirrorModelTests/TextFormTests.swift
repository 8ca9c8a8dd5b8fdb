import Crypto
import Foundation
@testable import MirrorModel
import Testing

@Suite("times and digests as mirror writes them", .timeLimit(.minutes(6)))
struct TextFormTests {
    @Test("a time is UTC to the millisecond, fixed width, its fraction rounded down; before 1970 too",
          arguments: [
              (0.0, "1970-01-01T00:00:00.000Z"),
              (1_795_892_100.123_9, "2026-11-28T18:55:00.123Z"),
              (951_782_400.5, "2000-02-29T00:00:00.500Z"),
              (-0.5, "1969-12-31T23:59:59.500Z"),
              (-86_400.25, "1969-12-30T23:59:59.750Z"),
              (253_402_300_799.999, "9999-12-31T23:59:59.999Z"),
              (253_402_300_800.0, "10000-01-01T00:00:00.000Z"),
          ])
    func timestamp(seconds: Double, text: String) {
        #expect(Timestamp.string(Date(timeIntervalSince1970: seconds)) == text)
    }

    @Test("a time reads back as the instant it was written from, to the millisecond")
    func timestampRoundTrip() throws {
        let date = Date(timeIntervalSince1970: 1_795_892_100.25)
        #expect(try #require(Timestamp.date(Timestamp.string(date))) == date)
    }

    @Test("a digest is two lowercase hex digits a byte, in order")
    func hex() {
        #expect(Hex.string(SHA256.hash(data: Array("abc".utf8)))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Hex.string([0x00, 0x09, 0x0a, 0xf0, 0xff]) == "00090af0ff")
        #expect(Hex.string([UInt8]()) == "")
    }
}
