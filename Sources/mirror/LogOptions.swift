import ArgumentParser
import Foundation

/// How log events are written to stderr: plain lines, or one JSON object a line for a log
/// pipeline.
enum LogFormat: String, CaseIterable {
    case text
    case json
}

/// What the commands that log share: `--log-format`, else the environment variable
/// `MIRROR_LOG_FORMAT` (set once for a pod or a crontab), else text.
struct LogOptions: ParsableArguments {
    static let variable = "MIRROR_LOG_FORMAT"

    @Option(name: .customLong("log-format"),
            help: ArgumentHelp("Write logs as text lines or as one JSON object a line (default: $MIRROR_LOG_FORMAT, else text).",
                               valueName: "text|json"))
    var logFormat: String?

    /// The format asked for; text when neither the flag nor the variable names one (checked by `validate()`).
    var format: LogFormat {
        LogFormat(rawValue: logFormat ?? Self.fromEnvironment ?? "") ?? .text
    }

    func validate() throws {
        let allowed = LogFormat.allCases.map(\.rawValue).joined(separator: " or ")
        if let logFormat {
            guard LogFormat(rawValue: logFormat) != nil else {
                throw ValidationError("--log-format must be \(allowed), not '\(logFormat)'")
            }
        } else if let named = Self.fromEnvironment, LogFormat(rawValue: named) == nil {
            throw ValidationError("environment variable \(Self.variable) must be \(allowed), not '\(named)'")
        }
    }

    /// The variable's value; an empty one names nothing.
    private static var fromEnvironment: String? {
        ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 }
    }
}
