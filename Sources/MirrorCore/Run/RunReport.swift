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

    /// `exitStatus`: the status the process exits with, as the command decided it.
    package init(summary: RunSummary, exitStatus: Int32, startedAt: String, finishedAt: String) {
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.exitStatus = Int(exitStatus)
        jobs = summary.jobs
    }

    /// Pretty JSON with snake_case keys, written whole: to `FILE.partial`, then renamed.
    package func write(to path: String) throws {
        var data = try JobOutcome.encoder(pretty: true).encode(self)
        data.append(0x0A)
        try WholeFile.write(data, to: path)
    }
}
