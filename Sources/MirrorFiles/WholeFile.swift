package import Foundation

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
        let descriptor: Int32
        do throws(FileError) {
            descriptor = try FileSystem.createOrEmpty(partial)
        } catch {
            throw failure(path, error)
        }
        do {
            try body(descriptor)
        } catch {
            try? FileSystem.close(descriptor)
            try? FileSystem.remove(partial)
            throw error
        }
        do throws(FileError) {
            try FileSystem.close(descriptor)
            try FileSystem.rename(partial, to: path)
        } catch {
            try? FileSystem.remove(partial)
            throw failure(path, error)
        }
    }

    package static func write(_ data: Data, to path: String) throws {
        try write(to: path) { descriptor in
            var sink = OutputSink(descriptor: descriptor)
            sink.write(Array(data))
            try sink.flush()
        }
    }

    private static func failure(_ path: String, _ error: FileError) -> Failure {
        Failure(description: "cannot write '\(path)': \(error.reason)")
    }
}
