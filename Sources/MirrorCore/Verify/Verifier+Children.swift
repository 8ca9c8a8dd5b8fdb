import Foundation

extension Verifier {
    /// Walks a child job for each of `parents` (its parent's records, first first), up to
    /// its `concurrency` at once, and reports the faults of each parent's walk under that
    /// parent's id.
    func verifyChildren(_ job: JobSpec, file: String, parents: [(id: String, record: String)],
                        options: Options) async -> JobVerification {
        let clock = ContinuousClock.now
        let single = job.oneRequestAtATime
        let walks = await JobScheduler.map(parents, width: job.concurrency) { parent -> (WalkResult, [WalkFault]) in
            do {
                let filled = try Runner.fill(single, parentID: parent.id, record: parent.record)
                let (verification, _) = await verify(filled, file: file, options: options)
                return (verification.walk, verification.faults)
            } catch {
                var walk = WalkResult()
                walk.error = "\(error)"
                return (walk, [WalkFault(kind: .badPage, page: nil, message: "\(error)")])
            }
        }
        var total = WalkResult()
        var faults: [WalkFault] = []
        for case let (walk, _)? in walks {
            total.merge(walk)
            if total.error == nil { total.error = walk.error }
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
        return JobVerification(job: job.name, file: file, walk: total, faults: faults, seconds: seconds)
    }
}
