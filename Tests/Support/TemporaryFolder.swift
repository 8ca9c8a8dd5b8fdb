import Foundation

/// A fresh temporary folder for one test, removed when the value goes, at the end of the
/// test's scope, however the test ends.
package final class TemporaryFolder: Sendable {
    package let path: String

    package init() throws {
        path = NSTemporaryDirectory() + "mirror-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
