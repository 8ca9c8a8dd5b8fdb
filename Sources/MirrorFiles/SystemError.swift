import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure the operating system reported, in the words `run` uses for it (`no space left
/// on device`): an errno, or a Foundation error wrapping one, never Foundation's dump of its
/// domain, code and user info.
package enum SystemError {
    /// The errno's text, lowercased, when `error` is one or wraps one (a Foundation file
    /// error on a full disk, a refused permission); else what `error` says of itself.
    package static func reason(_ error: any Error) -> String {
        if let file = error as? FileError { return text(errno: file.code) }
        if let code = errno(of: error) { return text(errno: code) }
        if let cocoa = error as? CocoaError, cocoa.code == .fileNoSuchFile || cocoa.code == .fileReadNoSuchFile {
            return text(errno: ENOENT)
        }
        return "\(error)"
    }

    /// `No space left on device` as `no space left on device`.
    package static func text(errno code: Int32) -> String {
        String(cString: strerror(code)).lowercased()
    }

    /// The errno `error` is or wraps, however deep.
    private static func errno(of error: any Error) -> Int32? {
        if let posix = error as? POSIXError { return posix.code.rawValue }
        let bridged = error as NSError
        if bridged.domain == NSPOSIXErrorDomain { return Int32(truncatingIfNeeded: bridged.code) }
        if let underlying = bridged.userInfo[NSUnderlyingErrorKey] as? any Error { return errno(of: underlying) }
        return nil
    }
}
