import Foundation
@testable import MirrorFiles
import Testing

@Suite("file system calls", .timeLimit(.minutes(6)))
struct FileSystemTests {
    @Test("a folder's listing holds every name, hidden ones too, and not . or ..")
    func listing() throws {
        let folder = try TemporaryFolder()
        for name in ["b.sqlite", "a.sqlite", ".mirror.lock"] { try folder.write(name, to: name) }
        try FileManager.default.createDirectory(atPath: folder.at("files"), withIntermediateDirectories: true)
        let descriptor = try FileSystem.openFolder(folder.path)
        defer { try? FileSystem.close(descriptor) }
        #expect(FileSystem.names(in: descriptor)?.sorted() == [".mirror.lock", "a.sqlite", "b.sqlite", "files"])
        // The descriptor stays open and usable.
        #expect(FileSystem.names(in: descriptor)?.count == 4)
    }

    @Test("a status tells a file, a folder and a link apart, follows a link only when asked, and has sizes")
    func status() throws {
        let folder = try TemporaryFolder()
        try folder.write("hello", to: "file")
        try FileManager.default.createDirectory(atPath: folder.at("sub"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder.at("link"), withDestinationPath: folder.at("file"))
        let file = try #require(FileStatus(path: folder.at("file")))
        #expect(file.kind == .regular)
        #expect(file.size == 5)
        #expect(file.links == 1)
        #expect(FileStatus(path: folder.at("sub"))?.kind == .folder)
        #expect(FileStatus(entryAt: folder.at("link"))?.kind == .link)
        let followed = try #require(FileStatus(path: folder.at("link")))
        #expect(followed.kind == .regular)
        #expect(followed.device == file.device && followed.inode == file.inode)
        let descriptor = try FileSystem.openFolder(folder.path)
        defer { try? FileSystem.close(descriptor) }
        #expect(FileStatus(entry: "link", in: descriptor)?.kind == .link)
        #expect(FileStatus(entry: "file", in: descriptor)?.size == 5)
        #expect(FileStatus(path: folder.at("none")) == nil)
        #expect(OutputFolder.isLink("link", in: descriptor))
        #expect(!OutputFolder.isLink("file", in: descriptor))
    }

    @Test("rename, link and remove do what they say, and a failure carries the system's reason")
    func renameLinkRemove() throws {
        let folder = try TemporaryFolder()
        try folder.write("one", to: "a")
        try folder.write("two", to: "b")
        try FileSystem.rename(folder.at("a"), to: folder.at("b"))
        #expect(try folder.entries() == ["b"])
        #expect(try folder.read("b") == "one")
        try FileSystem.link(folder.at("b"), at: folder.at("c"))
        #expect(FileStatus(path: folder.at("c"))?.links == 2)
        try FileSystem.remove(folder.at("c"))
        #expect(try folder.entries() == ["b"])
        let gone = #expect(throws: FileError.self) { try FileSystem.remove(folder.at("c")) }
        #expect(gone?.isMissing == true)
        #expect(gone?.reason == "No such file or directory")
        #expect(FileSystem.exists(folder.at("b")))
        #expect(!FileSystem.exists(folder.at("c")))
        #expect(FileSystem.absence(folder.at("c"))?.isMissing == true)
        #expect(FileSystem.absence(folder.at("b")) == nil)
    }

    @Test("a second exclusive lock on a file is refused at once while the first is held")
    func lock() throws {
        let folder = try TemporaryFolder()
        let first = try FileSystem.openLockFile(folder.at(".lock"), followingLinks: false)
        try FileSystem.lock(first, waiting: false)
        let second = try FileSystem.openLockFile(folder.at(".lock"), followingLinks: false)
        defer { try? FileSystem.close(second) }
        let refused = #expect(throws: FileError.self) { try FileSystem.lock(second, waiting: false) }
        #expect(refused?.code == EWOULDBLOCK)
        try FileSystem.close(first)
        try FileSystem.lock(second, waiting: false)
    }

    @Test("a no-link open of an output folder's entry refuses a link and makes a missing folder")
    func outputFolder() throws {
        let folder = try TemporaryFolder()
        try FileManager.default.createDirectory(atPath: folder.at("target"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder.at("files"), withDestinationPath: folder.at("target"))
        let root = try FileSystem.openFolder(folder.path)
        defer { try? FileSystem.close(root) }
        let refusal = #expect(throws: OutputFolder.Refusal.self) { try OutputFolder.openFolder("files", in: root, create: true) }
        #expect(refusal?.isLink == true)
        #expect(refusal?.reason("files") == "'files' is a symbolic link; mirror does not follow links in its output folder")
        let made = try OutputFolder.openFolder("new", in: root, create: true)
        try FileSystem.close(made)
        #expect(FileStatus(entryAt: folder.at("new"))?.kind == .folder)
        let missing = #expect(throws: OutputFolder.Refusal.self) { try OutputFolder.openFolder("none", in: root, create: false) }
        #expect(missing?.reason("none") == "No such file or directory")
    }

    @Test("a folder watch reports an entry made, nothing when nothing happened, and its end when the folder goes")
    func folderEvents() throws {
        let folder = try TemporaryFolder()
        let watched = folder.at("watched")
        try FileManager.default.createDirectory(atPath: watched, withIntermediateDirectories: true)
        let events = try #require(FolderEvents(watching: watched))
        defer { events.close() }
        #expect(events.read() == .quiet)
        try Data("x".utf8).write(to: URL(fileURLWithPath: watched + "/a.sqlite"))
        #expect(events.read() == .changed)
        #expect(events.read() == .quiet)
        try FileManager.default.removeItem(atPath: watched)
        #expect(events.read() == .ended)
        #expect(FolderEvents(watching: folder.at("none")) == nil)
    }
}
