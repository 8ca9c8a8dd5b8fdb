import Foundation
@testable import MirrorDownload
@testable import MirrorModel
@testable import MirrorStore
@testable import MirrorExport
import MirrorTestSupport
import Testing

/// A small tmpfs of its own, where the machine lets the tests mount one (as root): a full
/// disk that is really full.
enum SmallDisk {
    static let canMount: Bool = {
        guard getuid() == 0 else { return false }
        let probe = NSTemporaryDirectory() + "mirror-mount-probe-" + UUID().uuidString
        guard (try? FileManager.default.createDirectory(atPath: probe, withIntermediateDirectories: true)) != nil else { return false }
        defer { try? FileManager.default.removeItem(atPath: probe) }
        guard mount(at: probe, kilobytes: 64) else { return false }
        unmount(probe)
        return true
    }()

    @discardableResult
    static func mount(at folder: String, kilobytes: Int) -> Bool {
        run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", folder])
    }

    static func unmount(_ folder: String) {
        run("/bin/umount", ["-l", folder])
    }

    @discardableResult
    private static func run(_ tool: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}

@Suite("a full disk", .timeLimit(.minutes(6)))
struct FullDiskTests {
    @Test("a snapshot that runs out of space copying a file says so in words", .enabled(if: SmallDisk.canMount))
    func snapshotOnAFullDisk() async throws {
        let harness = try Harness()
        let file = [UInt8](repeating: 0x2A, count: 2 << 20)
        var path = ""
        try await FixtureServer.with({ request in
            if request.path == "/f/a.jpg" { return FixtureResponse(headers: [("Content-Type", "image/jpeg")], body: file) }
            return .json(PagedAPI(records: [[#"{"id":"1","f":"\#(request.base)/f/a.jpg"}"#]])
                .body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            let summary = try await harness.run(itemsJob("downloads: [f]"), server: server)
            #expect(summary.jobs.map(\.error) == [nil])
            path = FileNaming.relativePath(for: "\(server.base)/f/a.jpg")
        }
        // The snapshot goes to a disk of 512 KB of its own: the database fits, the 2 MB file
        // cannot be linked there and does not fit.
        let disk = harness.folder + "/disk"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        try #require(SmallDisk.mount(at: disk, kilobytes: 512))
        defer { SmallDisk.unmount(disk) }
        var options = SnapshotWriter.Options(output: harness.output, destination: disk + "/snap", mirrorVersion: "test")
        options.withFiles = true
        let failure = await #expect(throws: SnapshotWriter.Failure.self) {
            try await SnapshotWriter(options: options).write()
        }
        #expect(failure?.description == "no space left on device while copying \(path)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: disk) == ["snap.lock"])
    }
}
