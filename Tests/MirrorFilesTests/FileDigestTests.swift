import Crypto
import Foundation
@testable import MirrorFiles
import Testing

@Suite("file digests", .timeLimit(.minutes(6)))
struct FileDigestTests {
    private func hex(_ digest: SHA256.Digest) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }

    @Test("the digest of known bytes is their known SHA-256, and of no bytes the empty one")
    func knownBytes() throws {
        let folder = try TemporaryFolder()
        try folder.write("abc", to: "abc")
        try folder.write("", to: "empty")
        let abc = try FileDigest.read(folder.at("abc"))
        #expect(abc.size == 3)
        #expect(hex(abc.sha256) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let empty = try FileDigest.read(folder.at("empty"))
        #expect(empty.size == 0)
        #expect(hex(empty.sha256) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("a file of several pieces is read whole and copied byte for byte")
    func copy() throws {
        let folder = try TemporaryFolder()
        let bytes = (0..<(3 << 20) + 5).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        try Data(bytes).write(to: URL(fileURLWithPath: folder.at("big")))
        let read = try FileDigest.read(folder.at("big"), copyingTo: folder.at("copy"))
        #expect(read.size == 3_145_733)
        #expect(read.sha256 == SHA256.hash(data: bytes))
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder.at("copy"))) == Data(bytes))
    }

    @Test("a missing file and a copy onto a file already there are failures that say which file")
    func failures() throws {
        let folder = try TemporaryFolder()
        let missing = #expect(throws: FileDigest.Failure.self) { try FileDigest.read(folder.at("none")) }
        #expect(missing?.path == folder.at("none"))
        #expect(missing?.writing == false)
        #expect(missing?.error.reason == "No such file or directory")
        try folder.write("abc", to: "abc")
        try folder.write("kept", to: "there")
        let taken = #expect(throws: FileDigest.Failure.self) {
            try FileDigest.read(folder.at("abc"), copyingTo: folder.at("there"))
        }
        #expect(taken?.path == folder.at("there"))
        #expect(taken?.writing == true)
        #expect(taken?.error.reason == "File exists")
        #expect(try folder.read("there") == "kept")
    }
}
