import Foundation
@testable import MirrorFiles
import Testing

@Suite("the output lock", .timeLimit(.minutes(6)))
struct OutputLockTests {
    @Test("the lock holds the holder's pid, refuses a second holder naming it, and is free once let go")
    func secondHolder() throws {
        let folder = try TemporaryFolder()
        let output = folder.at("out")
        var first: OutputLock? = try OutputLock(folder: output)
        #expect(first != nil)
        #expect(try folder.read("out/.mirror.lock") == "\(getpid())\n")
        let refused = #expect(throws: LockedError.self) { try OutputLock(folder: output) }
        #expect(refused?.holder == getpid())
        #expect(refused?.description == "another mirror run (pid \(getpid())) holds the lock on '\(output)'")
        first = nil
        #expect(try folder.read("out/.mirror.lock") == "")
        let second = try OutputLock(folder: output)
        #expect(try folder.read("out/.mirror.lock") == "\(getpid())\n")
        withExtendedLifetime(second) {}
    }

    @Test("a lock file that is a symbolic link is refused, and what it points to is left alone")
    func linkedLockFile() throws {
        let folder = try TemporaryFolder()
        try folder.write("precious", to: "elsewhere")
        try FileManager.default.createDirectory(atPath: folder.at("out"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder.at("out/.mirror.lock"), withDestinationPath: folder.at("elsewhere"))
        let refused = #expect(throws: LockFileError.self) { try OutputLock(folder: folder.at("out")) }
        #expect(refused?.description == "cannot lock the output folder '\(folder.at("out"))': "
            + "'.mirror.lock' is a symbolic link; mirror does not follow links in its output folder")
        #expect(try folder.read("elsewhere") == "precious")
    }

    @Test("a lock file with a second name (a hard link) is refused")
    func hardLinkedLockFile() throws {
        let folder = try TemporaryFolder()
        try folder.write("precious", to: "elsewhere")
        try FileManager.default.createDirectory(atPath: folder.at("out"), withIntermediateDirectories: true)
        try FileManager.default.linkItem(atPath: folder.at("elsewhere"), toPath: folder.at("out/.mirror.lock"))
        let refused = #expect(throws: LockFileError.self) { try OutputLock(folder: folder.at("out")) }
        #expect(refused?.description == "cannot lock the output folder '\(folder.at("out"))': "
            + "'.mirror.lock' is a hard link or not a plain file; mirror does not write to files it did not make")
        #expect(try folder.read("elsewhere") == "precious")
    }
}
