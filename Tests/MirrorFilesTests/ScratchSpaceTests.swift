import Foundation
@testable import MirrorFiles
import Testing

@Suite("scratch space", .timeLimit(.minutes(6)))
struct ScratchSpaceTests {
    @Test("bytes held read back as written, in a file with no name, whose blocks are freed as each is let go")
    func holdsAndLetsGo() throws {
        let folder = try TemporaryFolder()
        let space = ScratchSpace(folder: folder.path)
        let pieces: [[UInt8]] = (0 ..< 8).map { index in (0 ..< (85_000 + index * 1000)).map { UInt8(truncatingIfNeeded: $0 * 31 + index) } }
        var held = try pieces.map { piece in try #require(piece.withUnsafeBytes { space.hold($0) }) }
        for (piece, bytes) in zip(pieces, held) {
            #expect(try read(bytes) == piece)
            #expect(bytes.range.count == piece.count && bytes.range.lowerBound % ScratchFile.alignment == 0)
        }
        // One file for all, with no name in the folder.
        let file = held[0].file
        #expect(held.allSatisfy { $0.file === file })
        let descriptor = try FileSystem.openFolder(folder.path)
        defer { try? FileSystem.close(descriptor) }
        #expect(FileSystem.names(in: descriptor) == [])
        let before = try #require(FileStatus(descriptor: file.descriptor))
        #expect(before.allocated >= pieces.reduce(0) { $0 + $1.count })
        // Let go of every other one: their blocks are freed, the rest read as they were.
        held = held.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        let after = try #require(FileStatus(descriptor: file.descriptor))
        let kept = stride(from: 0, to: pieces.count, by: 2).reduce(0) { $0 + pieces[$1].count }
        #expect(after.size == before.size)
        #expect(after.allocated < before.allocated && after.allocated <= kept + pieces.count * ScratchFile.alignment)
        for (index, bytes) in zip(stride(from: 0, to: pieces.count, by: 2), held) {
            #expect(try read(bytes) == pieces[index])
        }
    }

    @Test("a folder that takes no file holds nothing, the caller keeping its bytes, until it is asked again after a while")
    func refused() async throws {
        let folder = try TemporaryFolder()
        let space = ScratchSpace(folder: folder.path + "/later", retry: .seconds(1))
        let piece = [UInt8](repeating: 1, count: 10)
        #expect(piece.withUnsafeBytes { space.hold($0) } == nil)
        try FileManager.default.createDirectory(atPath: folder.path + "/later", withIntermediateDirectories: false)
        // Not asked again at once.
        #expect(piece.withUnsafeBytes { space.hold($0) } == nil)
        try await Task.sleep(for: .milliseconds(1100))
        let held = try #require(piece.withUnsafeBytes { space.hold($0) })
        #expect(try read(held) == piece)
    }

    @Test("bytes read back whole, or the file's early end said")
    func readsExactly() throws {
        let folder = try TemporaryFolder()
        let space = ScratchSpace(folder: folder.path)
        let piece = (0 ..< 10_000).map { UInt8(truncatingIfNeeded: $0) }
        let held = try #require(piece.withUnsafeBytes { space.hold($0) })
        try FileSystem.truncate(held.file.descriptor, to: 5_000)
        #expect(throws: FileError.endedEarly) { try read(held) }
    }

    private func read(_ held: ScratchBytes) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: held.range.count)
        try bytes.withUnsafeMutableBytes { buffer in try held.read(into: buffer) }
        return bytes
    }
}
