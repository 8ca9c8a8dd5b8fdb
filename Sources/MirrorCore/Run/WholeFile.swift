import Foundation

/// Files a run hands to other programs (reports, JUnit XML) appear whole or not at all:
/// written to `FILE.partial`, then renamed over `FILE`.
public enum WholeFile {
    public static func write(_ data: Data, to path: String) throws {
        let partial = path + ".partial"
        try data.write(to: URL(fileURLWithPath: partial))
        guard rename(partial, path) == 0 else {
            let code = errno
            unlink(partial)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path, NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)])
        }
    }
}
