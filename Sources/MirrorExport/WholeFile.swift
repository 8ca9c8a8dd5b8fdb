package import Foundation
import MirrorModel

/// Files mirror hands to other programs (exports, reports, JUnit XML) appear whole or not
/// at all: written to `FILE.partial`, then renamed over `FILE`; a failed write leaves
/// nothing behind.
package enum WholeFile {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Runs `body` with a descriptor open for writing `path.partial`, then renames it to `path`.
    package static func write(to path: String, _ body: (Int32) throws -> Void) throws {
        let partial = path + ".partial"
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure(path) }
        do {
            try body(descriptor)
        } catch {
            close(descriptor)
            unlink(partial)
            throw error
        }
        guard close(descriptor) == 0, rename(partial, path) == 0 else {
            let failure = failure(path)
            unlink(partial)
            throw failure
        }
    }

    package static func write(_ data: Data, to path: String) throws {
        try write(to: path) { descriptor in
            var sink = OutputSink(descriptor: descriptor)
            sink.write(Array(data))
            try sink.flush()
        }
    }

    private static func failure(_ path: String) -> Failure {
        Failure(description: "cannot write '\(path)': \(String(cString: strerror(errno)))")
    }
}
