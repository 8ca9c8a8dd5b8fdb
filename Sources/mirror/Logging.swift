import Logging

/// Logs go to stderr; the summary and exports go to stdout.
enum LogSetup {
    static func bootstrap(quiet: Bool, verbose: Bool) -> Logger {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = quiet ? .error : verbose ? .debug : .info
            return handler
        }
        return Logger(label: "mirror")
    }
}
