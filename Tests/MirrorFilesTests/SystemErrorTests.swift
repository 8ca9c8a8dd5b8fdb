import Foundation
@testable import MirrorFiles
import Testing

@Suite("system errors", .timeLimit(.minutes(6)))
struct SystemErrorTests {
    @Test("a file error Foundation builds on a full disk, an exceeded quota or a refused permission is said in words",
          arguments: [
              (ENOSPC, CocoaError.Code.fileWriteOutOfSpace, "no space left on device"),
              (EDQUOT, CocoaError.Code.fileWriteOutOfSpace, "disk quota exceeded"),
              (EACCES, CocoaError.Code.fileWriteNoPermission, "permission denied"),
          ])
    func words(code: Int32, cocoa: CocoaError.Code, words: String) throws {
        // As Foundation's FileManager builds it when copying a file fails with `code`.
        let source = "/srv/mirror/cache/files/ab/0123456789abcdef.jpg"
        let error = CocoaError(cocoa, userInfo: [
            "NSUserStringVariant": ["Copy"], "NSSourceFilePathErrorKey": source,
            "NSDestinationFilePath": "/srv/snap.partial/files/ab/0123456789abcdef.jpg",
            NSURLErrorKey: URL(fileURLWithPath: source), NSFilePathErrorKey: source,
            NSUnderlyingErrorKey: NSError(domain: NSPOSIXErrorDomain, code: Int(code)),
        ])
        #expect(SystemError.reason(error) == words)
        #expect(SystemError.reason(POSIXError(try #require(POSIXErrorCode(rawValue: code)))) == words)
    }
}
