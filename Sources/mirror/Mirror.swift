import ArgumentParser
import Foundation
import MirrorCore
import MirrorFiles
import MirrorJobFile
import MirrorModel
import MirrorRemote
import MirrorStore

/// The root command. Exit statuses are decided here and nowhere else:
/// 0 success, 1 a job failed (or a file could not be read or written: the lock file too),
/// 2 usage or config error, 3 another run holds the output folder's lock or the shard's lease
/// (or another snapshot writes to its DIR), 4 the change
/// feed no longer reaches back to an export's `--changes-since` (a new snapshot is needed),
/// 75 a run deferred a job and failed none (sysexits' EX_TEMPFAIL), as `ExitStatus.of(_:)` decides for a run,
/// 128 + N stopped by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
@main
struct Mirror: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mirror",
        abstract: "Mirror paged JSON APIs into per-table SQLite files for offline use.",
        discussion: """
            Exit status: 0 success; 1 a job failed (run), a page-walk fault was found \
            (verify), a job is failed or stale (status --check), or a file could not be \
            read or written, or a run's state (--state) pulled or pushed; 2 usage or config \
            error (nothing fetched); 3 another mirror run holds the output folder's lock or \
            the shard's lease (--state); 4 the change feed no longer holds the changes \
            since an export's --changes-since (take a new snapshot); 75 a run deferred a job (the \
            API asked for a longer wait than its max_wait) and no job failed; 130, 143 or 129 a \
            run stopped by SIGINT, SIGTERM or SIGHUP.

            \(jobFileReference)
            """,
        version: "0.1.0",
        subcommands: [RunCommand.self, ExportCommand.self, SnapshotCommand.self, PublishCommand.self, PullCommand.self, ServeCommand.self,
                      DeviceTokenCommand.self, VerifyCommand.self, StatusCommand.self, CheckCommand.self,
                      PlanCommand.self, InitCommand.self, InferCommand.self, SchemaCommand.self])

    static func main() async {
        // A closed stdout or stderr (a pipe whose reader left) is a write error, not a kill.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
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
        } catch let error as LeaseHeldError {
            printError("error: \(error.description)")
            Foundation.exit(3)
        } catch let error as StateError {
            printError("error: \(error.description)")
            Foundation.exit(1)
        } catch let error as LockFileError {
            printError("error: \(error.description)")
            Foundation.exit(1)
        } catch let error as ChangeFeed.Unreachable {
            printError("error: \(error.description)")
            Foundation.exit(4)
        } catch let interrupted as Interrupted {
            Foundation.exit(interrupted.exitStatus)
        } catch let error as OutputError {
            printError("error: \(error.description)")
            Foundation.exit(1)
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

/// The status a run exits with, from what its summary says happened.
enum ExitStatus {
    /// sysexits' EX_TEMPFAIL, which cron users know: no job failed, and at least one was
    /// deferred (the API asked for a longer wait than its `max_wait`).
    static let deferred: Int32 = 75

    /// 128 + the signal that stopped the run; 3 when its shard's lease was lost; 1 when
    /// `--max-time` stopped it, a job failed (or was stopped) or its state could not be pushed;
    /// 75 when no job failed and one was deferred; 0 when every job succeeded.
    static func of(_ summary: RunSummary) -> Int32 {
        if let signal = summary.signal { return Interrupted(signal: signal).exitStatus }
        if summary.state?.leaseLost == true { return 3 }
        if summary.state?.failure != nil { return 1 }
        if summary.timedOut || summary.jobs.contains(where: { $0.status != .ok && $0.status != .deferred }) { return 1 }
        return summary.jobs.contains { $0.status == .deferred } ? deferred : 0
    }
}

/// Standard output could not be written: a full disk, a closed pipe.
struct OutputError: Error, CustomStringConvertible {
    let reason: String
    var description: String { "cannot write to standard output: \(reason)" }
}

/// Writes all of `bytes` to a descriptor; the errno of a failure.
private func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Int32? {
    do throws(FileError) {
        try FileSystem.write(bytes, to: descriptor)
        return nil
    } catch {
        return error.code
    }
}

/// A line on stderr; if stderr itself is gone there is nobody left to tell.
func printError(_ text: String) {
    _ = writeAll(Array((text + "\n").utf8), to: STDERR_FILENO)
}

func printOut(_ text: String) throws(OutputError) {
    if let code = writeAll(Array((text + "\n").utf8), to: STDOUT_FILENO) {
        throw OutputError(reason: FileError(code: code).reason)
    }
}

/// Where every help text sends a reader for the job-file format.
let jobFileReference = """
    Job files: docs/job-files.md describes every key, its type and default \
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
