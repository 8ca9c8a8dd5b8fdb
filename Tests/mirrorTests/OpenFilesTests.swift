import Foundation
@testable import MirrorModel
import MirrorTestSupport
import Testing

@Suite("open files", .timeLimit(.minutes(8)))
struct OpenFilesTests {
    @Test("300 jobs, each with a database of its own, run within 256 open files and store every table",
          .timeLimit(.minutes(8)))
    func manyDatabases() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let jobs = 1...300
        try await FixtureServer.with({ request in
            let job = request.parameter("job") ?? ""
            return .json(request.parameter("page") == "1"
                ? #"{"data":{"list":[{"id":"\#(job)-1"},{"id":"\#(job)-2"}]}}"# : #"{"data":{"list":[]}}"#)
        }) { server in
            var yaml = "version: 1\noutput: out\ndefaults: { records: data.list, id: id, concurrency: 1 }\njobs:\n"
            for job in jobs {
                yaml += "  - { name: j\(job), url: \"\(server.base)/items?job=j\(job)&page={page}\", table: t_\(job) }\n"
            }
            try yaml.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            // The shell lowers the limit on open files for itself and the mirror it becomes.
            let out = folder + "/run.stdout"
            let err = folder + "/run.stderr"
            let child = try Child("/bin/sh", ["-c", #"ulimit -n 256 && exec "$0" run jobs.yaml --quiet"#, mirrorBinary.path],
                                  in: folder, environment: ProcessInfo.processInfo.environment, stdout: out, stderr: err)
            let watchdog = Task {
                try await Task.sleep(for: .seconds(240))
                kill(child.pid, SIGKILL)
            }
            let ending = await child.ending()
            watchdog.cancel()
            // What the run printed says why, if it did not end well (a crash prints its trace).
            let printed = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
            #expect(ending == .exited(0), Comment(rawValue: String(printed.prefix(4000))))
            #expect(try String(contentsOfFile: out, encoding: .utf8) == "")
            #expect(try String(contentsOfFile: err, encoding: .utf8) == "")
            #expect(server.requests.count == 2 * jobs.count)
        }
        // Every table, read by one sqlite3 shell that opens the databases one after another.
        let script = folder + "/read.sql"
        try jobs.map { job in
            ".open --readonly out/t_\(job).sqlite\nSELECT 't_\(job)', group_concat(id, ' ') FROM (SELECT id FROM t_\(job) ORDER BY position);\n"
        }.joined().write(toFile: script, atomically: true, encoding: .utf8)
        let tables = folder + "/tables.txt"
        _ = await (try Child("/usr/bin/sqlite3", [":memory:", ".read read.sql"], in: folder, environment: [:], stdout: tables)).ending()
        #expect(try String(contentsOfFile: tables, encoding: .utf8) == jobs.map { "t_\($0)|j\($0)-1 j\($0)-2\n" }.joined())
    }
}

@Suite("child processes", .timeLimit(.minutes(6)))
struct ChildProcessTests {
    @Test("a child started by the tests inherits no open file but its stdin, stdout and stderr")
    func noInheritedFiles() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Opened without O_CLOEXEC: it would reach the child but for the spawn's close-from.
        let held = open(folder, O_RDONLY)
        defer { close(held) }
        #expect(held > 2)
        let out = folder + "/fds"
        let child = try Child("/bin/sh", ["-c", #"for f in /proc/$$/fd/*; do echo "${f##*/}"; done"#], in: folder,
                              environment: [:], stdout: out)
        #expect(await child.ending() == .exited(0))
        // 3 is the folder the shell reads to list them.
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "0\n1\n2\n3\n")
    }

    @Test("a child still running when its waiter is cancelled (a test past its time limit) is killed, and the wait ends")
    func killedOnCancel() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let child = try Child("/bin/sleep", ["600"], in: folder, environment: [:])
        let waiter = Task { await child.ending() }
        try await Task.sleep(for: .milliseconds(100))
        #expect(kill(child.pid, 0) == 0)
        waiter.cancel()
        #expect(await waiter.value == .signaled(SIGKILL))
        #expect(kill(child.pid, 0) == -1 && errno == ESRCH)
    }
}
