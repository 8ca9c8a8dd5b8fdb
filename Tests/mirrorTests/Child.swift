import Foundation
@testable import MirrorModel

/// A child process started with `posix_spawn`. (Foundation's `Process.run()` crashed now and
/// then on Linux, copying memory it did not own, while many tests started processes.)
struct Child: Sendable {
    /// How a child ended.
    enum Ending: Equatable, Sendable {
        case exited(Int32)
        case signaled(Int32)

        /// The exit status, or 128 + the signal, as a shell reports it.
        var status: Int32 {
            switch self {
            case let .exited(code): return code
            case let .signaled(signal): return 128 + signal
            }
        }
    }

    let pid: pid_t

    /// Starts `executable` with `arguments` in `folder`, stdin from /dev/null and stdout and
    /// stderr to the files named (or /dev/null).
    init(_ executable: String, _ arguments: [String], in folder: String, environment: [String: String],
         stdout: String? = nil, stderr: String? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // Nothing else the test process has open reaches the child: with many tests running,
        // what it would inherit counts against a child's limit on open files (`ulimit -n`).
        if let closeFrom = Self.closeFrom { _ = closeFrom(&actions, 3) }
        // GNU env changes to the folder, then runs the program with the environment given.
        let argv = ["/usr/bin/env", "-C", folder, executable] + arguments
        let envp = environment.map { "\($0.key)=\($0.value)" }
        var cArgv = argv.map { strdup($0) } + [nil]
        var cEnvp = envp.map { strdup($0) } + [nil]
        defer {
            cArgv.forEach { free($0) }
            cEnvp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, "/usr/bin/env", &actions, nil, &cArgv, &cEnvp)
        guard code == 0 else { throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO) }
        self.pid = pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's
    /// Glibc module does not declare.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            return nil
        }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Waits for the child to end, without holding a thread of the cooperative pool. Once the
    /// waiting task is cancelled (its test ran past its time limit), the child is killed and
    /// waited for: a child that would never end (a server whose stop never came) ends its test
    /// as a failure, where the test, and the whole run, would have waited on for ever.
    func ending() async -> Ending {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { break }
            if result < 0, errno != EINTR { return .exited(-1) }
            do {
                try await Task.sleep(for: .milliseconds(2))
            } catch {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 {
                    if errno != EINTR { return .exited(-1) }
                }
                break
            }
        }
        let signal = status & 0x7F
        return signal == 0 ? .exited((status >> 8) & 0xFF) : .signaled(signal)
    }
}
