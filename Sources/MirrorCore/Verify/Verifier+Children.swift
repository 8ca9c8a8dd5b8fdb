import Foundation
import MirrorModel

extension Verifier {
    /// Walks a child job for each of `parents` (its parent's records, first first), up to
    /// its `concurrency` at once, and reports the faults of each parent's walk under that
    /// parent's id; keeps the first `keep` records walked, for its own children.
    func verifyChildren(_ job: JobSpec, file: String, parents: [(id: String, record: String)],
                        options: Options, keep: Int = 0) async -> (JobVerification, [(id: String, record: String)]) {
        let clock = ContinuousClock.now
        let single = job.oneRequestAtATime
        let walks = await JobScheduler.map(parents, width: job.concurrency) { parent -> (WalkResult, [WalkFault], [(id: String, record: String)]) in
            do {
                let filled = try Runner.fill(single, parentID: parent.id, record: parent.record)
                let (verification, kept) = await verify(filled, file: file, options: options, keep: keep)
                return (verification.walk, verification.faults, kept)
            } catch {
                var walk = WalkResult()
                walk.error = .parent(job: job.name, id: parent.id, error)
                return (walk, [WalkFault(kind: .badPage, page: nil, message: "\(error)")], [])
            }
        }
        var total = WalkResult()
        var faults: [WalkFault] = []
        var kept: [(id: String, record: String)] = []
        for case let (walk, _, records)? in walks {
            total.merge(walk)
            if total.error == nil { total.error = walk.error }
            kept += records.prefix(keep - kept.count)
        }
        for (parent, walk) in zip(parents, walks) {
            for fault in walk?.1 ?? [] {
                faults.append(WalkFault(kind: fault.kind, page: fault.page,
                                        message: job.redactor.redact("parent '\(parent.id)': \(fault.message)")))
            }
        }
        total.stop = Task.isCancelled ? .interrupted : .parents(parents.count)
        let elapsed = ContinuousClock.now - clock
        let seconds = elapsed.seconds
        return (JobVerification(job: job.name, file: file, walk: total, faults: faults, seconds: seconds), kept)
    }
}
