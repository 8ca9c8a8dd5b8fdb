import Foundation
import Logging
import MirrorJobFile
import MirrorModel

/// Logs go to stderr; the summary and exports go to stdout. On a terminal `run` shows a
/// live line per job and only warnings and errors are logged (every page with
/// `--verbose`); otherwise plain log lines, one per job, so cron mails stay short. With
/// `--log-format json`, the same events as one JSON object a line (no live lines: the
/// commands pass no `display` then).
enum LogSetup {
    static func bootstrap(quiet: Bool, verbose: Bool, format: LogFormat, display: TerminalProgress? = nil) -> Logger {
        let level: Logger.Level = quiet ? .error : verbose ? .debug : display != nil ? .warning : .info
        LoggingSystem.bootstrap { label in
            if format == .json {
                return JSONLogHandler(logLevel: level)
            }
            if let display {
                return TerminalLogHandler(label: label, display: display, logLevel: level)
            }
            return PlainLogHandler(label: label, logLevel: level)
        }
        return Logger(label: "mirror")
    }
}

/// One plain line per event on stderr: `2026-11-23T17:02:11+0000 info mirror: job=events
/// pages=3 stop=empty page 3 job done`. Unlike swift-log's stream handler it leaves out
/// the Swift module that logged (`[MirrorCore]`), which says nothing to a user.
struct PlainLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(label: String, logLevel: Logger.Level) {
        self.label = label
        self.logLevel = logLevel
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        let line = "\(Self.timestamp()) \(event.level) \(label):\(fields) \(event.message)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    private static func timestamp() -> String {
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
