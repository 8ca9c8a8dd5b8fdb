import Foundation

/// A fresh folder of a test's own, removed when the test lets go of it.
final class TemporaryFolder {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "mirror-files-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    func at(_ name: String) -> String { path + "/" + name }

    func write(_ text: String, to name: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: at(name)))
    }

    func read(_ name: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: at(name))), as: UTF8.self)
    }

    /// The folder's entries, hidden ones included, in name order.
    func entries() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }
}
