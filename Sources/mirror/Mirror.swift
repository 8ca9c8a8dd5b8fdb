import ArgumentParser
import Foundation
import MirrorCore

/// The root command. Exit statuses are decided here and nowhere else:
/// 0 success, 1 a job failed, 2 usage or config error, 3 the output folder is locked.
@main
struct Mirror: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mirror",
        abstract: "Mirror paged JSON APIs into per-table SQLite files for offline use.",
        discussion: """
            Exit status: 0 success; 1 a job failed (run), a page-walk fault was found \
            (verify), a job is failed or stale (status --check), or a file could not be \
            read or written; 2 usage or config error (nothing fetched); 3 another mirror \
            run holds the output folder's lock.

            \(jobFileReference)
            """,
        version: "0.1.0",
        subcommands: [RunCommand.self, ExportCommand.self, VerifyCommand.self, StatusCommand.self, CheckCommand.self,
                      SchemaCommand.self])

    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let error as ConfigError {
            printError(error.description)
            Foundation.exit(2)
        } catch let error as UsageError {
            printError("error: \(error.description)")
            Foundation.exit(2)
        } catch let error as LockedError {
            printError("error: \(error.description)")
            Foundation.exit(3)
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                exit(withError: error)
            }
            printError(fullMessage(for: error))
            Foundation.exit(code == .validationFailure ? 2 : code.rawValue)
        }
    }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

func printOut(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// Where every help text sends a reader for the job-file format.
let jobFileReference = """
    Job files: README.md, section "Job files", describes every key, its type and default \
    (also `man mirror` once installed); `mirror schema` prints them as a JSON Schema.
    """

/// Loads job files; a folder named where a job file belongs is a usage error, said plainly.
func loadJobFiles(_ paths: [String]) throws -> [JobFile] {
    for path in paths {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            throw UsageError("'\(path)' is a directory, not a job file")
        }
    }
    return try JobFileLoader().load(paths: paths)
}
