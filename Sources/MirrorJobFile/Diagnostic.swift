/// One problem found in a job file, located at the offending key or value.
import MirrorModel

package struct Diagnostic: Sendable, Equatable, CustomStringConvertible {
    package let file: String
    package let line: Int
    package let column: Int
    package let message: String

    package init(file: String, line: Int, column: Int, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    /// `FILE:LINE:COLUMN: message`, the form compilers and editors understand.
    package var description: String { "\(file):\(line):\(column): \(message)" }
}

/// Every problem found in the job files of one command, sorted by file and line.
package struct ConfigError: Error, Sendable, CustomStringConvertible {
    package let diagnostics: [Diagnostic]

    package init(_ diagnostics: [Diagnostic]) {
        self.diagnostics = diagnostics.sorted {
            ($0.file, $0.line, $0.column) < ($1.file, $1.line, $1.column)
        }
    }

    package var description: String {
        diagnostics.map(\.description).joined(separator: "\n")
    }
}
