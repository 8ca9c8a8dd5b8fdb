import Logging

/// Logs go to stderr; the summary and exports go to stdout. On a terminal `run` shows a
/// live line per job and only warnings and errors are logged (every page with
/// `--verbose`); otherwise plain log lines, one per job, so cron mails stay short.
enum LogSetup {
    static func bootstrap(quiet: Bool, verbose: Bool, display: TerminalProgress? = nil) -> Logger {
        let level: Logger.Level = quiet ? .error : verbose ? .debug : display != nil ? .warning : .info
        LoggingSystem.bootstrap { label in
            if let display {
                return TerminalLogHandler(label: label, display: display, logLevel: level)
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "mirror")
    }
}
