import Foundation
import MirrorExport
import MirrorFiles
package import MirrorModel

/// What `--report FILE` writes: the whole run as JSON, one entry per job.
package struct RunReport: Sendable, Codable, Equatable {
    package var startedAt: String
    package var finishedAt: String
    package var exitStatus: Int
    package var jobs: [JobOutcome]

    /// `signal`: the signal that stopped the run, if one did (its exit status is 128 + it).
    package init(summary: RunSummary, startedAt: String, finishedAt: String, signal: Int32? = nil) {
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        exitStatus = signal.map { 128 + Int($0) } ?? Int(summary.exitStatus)
        jobs = summary.jobs
    }

    /// Pretty JSON with snake_case keys, written whole: to `FILE.partial`, then renamed.
    package func write(to path: String) throws {
        var data = try JobOutcome.encoder(pretty: true).encode(self)
        data.append(0x0A)
        try WholeFile.write(data, to: path)
    }
}
