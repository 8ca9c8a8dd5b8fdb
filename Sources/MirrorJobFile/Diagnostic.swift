/// One problem found in a job file, located at the offending key or value.
import MirrorModel

public struct Diagnostic: Sendable, Equatable, CustomStringConvertible {
    public let file: String
    public let line: Int
    public let column: Int
    public let message: String

    public init(file: String, line: Int, column: Int, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    /// `FILE:LINE:COLUMN: message`, the form compilers and editors understand.
    public var description: String { "\(file):\(line):\(column): \(message)" }
}

/// Every problem found in the job files of one command, sorted by file and line.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public let diagnostics: [Diagnostic]

    public init(_ diagnostics: [Diagnostic]) {
        self.diagnostics = diagnostics.sorted {
            ($0.file, $0.line, $0.column) < ($1.file, $1.line, $1.column)
        }
    }

    public var description: String {
        diagnostics.map(\.description).joined(separator: "\n")
    }
}
