import Foundation
import Logging
import MirrorHTTP
import MirrorModel
import MirrorStore

extension Runner {
    /// The outcome of a job whose last walk was deferred until a time that has not come (see
    /// `max_wait`): the API is asked nothing, and the run is recorded as deferred again, with
    /// the same time. Nil when the job is to be walked (a store that cannot say is the walk's
    /// to report).
    func deferredEarlier(_ job: JobSpec, file: JobFile, store: TableStore, child: Bool) async -> JobOutcome? {
        guard let deferral = try? await store.deferral(job: job.name, account: job.account),
              deferral.until > Timestamp.string(client.clock.date) else { return nil }
        var walk = WalkResult(stop: .deferred)
        // A child job's checkpoint is its last parent's: it resumes with its queued parents.
        walk.error = .deferredEarlier(job: job.name, until: deferral.until, page: child ? nil : deferral.page)
        let now = Timestamp.string(Date())
        let outcome = JobOutcome(job: job, file: file.path, database: store.path, ending: .deferred, walk: walk, pruned: 0,
                                 files: nil, startedAt: now, finishedAt: now, seconds: 0)
        do {
            try await store.record(run: outcome)
        } catch {
            logger.error("cannot record the run", metadata: ["job": "\(job.name)", "error": "\(error)"])
        }
        progress?(JobProgress(job: job.name, ending: .deferred, page: nil, lastPage: job.pages.to, walk: walk))
        logger.warning("job deferred by an earlier run", metadata: ["job": "\(job.name)", "until": "\(deferral.until)"])
        return outcome
    }
}
