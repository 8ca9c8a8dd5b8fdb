import Foundation
import Logging
import MirrorDownload
import MirrorJSON
import MirrorModel
import MirrorStore
import MirrorWalk

/// A child job's parent (`parent`): its spec and the store of its database.
struct Family: Sendable {
    let parent: JobSpec
    let store: TableStore
}

extension Runner {
    /// Walks the children of each parent record queued for `job` (new or changed in its
    /// parent's walks; every one on its first run and with `--refresh`), up to the job's
    /// `concurrency` parents at once, one request at a time each. A parent walked whole
    /// leaves the queue, and its children not seen in the walk are pruned (`prune`: their
    /// count is returned); one that fails stays queued with its error. Children of parents
    /// that are gone are deleted first.
    func walkChildren(_ job: JobSpec, family: Family, store: TableStore, options: Options,
                      relay: ProgressRelay?, downloader: Downloader?) async -> (WalkResult, ParentWalks, Int) {
        var total = WalkResult()
        var walks = ParentWalks()
        let parent = family.parent
        let queued: [String]
        do {
            // Every parent was queued when the parent's file says so, written with the queue, and
            // the child's file saw that very mark: a parent's file copied before the queue (a
            // pushed state) or a child's file made again queues them all again. A child's file
            // of an earlier version, beside a parent's file without a mark, keeps its own.
            let mark = try await family.store.parentsQueued(child: job.name, account: parent.account)
            let seen = try await store.parentsQueueSeen(job: job.name, account: job.account)
            let queuedAll = mark.map { seen.seen == $0 } ?? (seen.seen == nil && seen.earlier != nil)
            if options.refresh || !queuedAll {
                let time = Timestamp.string(Date())
                try await family.store.queueAllParents(child: job.name, table: parent.table, account: parent.account, time: time)
                try await store.noteParentsQueued(job: job.name, account: job.account, at: time)
            }
            // The parents the stored children name, looked up one chunk at a time: neither side is
            // held whole in memory.
            let named = try await store.parentIDs(table: job.table, account: job.account)
            let living = try await family.store.existing(named, table: parent.table, account: parent.account)
            walks.orphansDeleted = try await store.deleteChildren(of: named.filter { !living.contains($0) }, table: job.table,
                                                                  account: job.account)
            queued = try await family.store.queuedParents(child: job.name, table: parent.table, account: parent.account)
        } catch {
            total.error = .store(job: job.name, path: family.store.path, error)
            return (total, walks, 0)
        }
        let single = job.oneRequestAtATime
        let outcomes = await JobScheduler.map(queued, width: job.concurrency) { id -> (WalkResult, Int)? in
            let started = Timestamp.string(Date())
            var walk = WalkResult()
            var pruned = 0
            do {
                // Gone since it was queued (a parent job running at the same time): nothing to walk.
                guard let record = try await family.store.record(table: parent.table, account: parent.account, id: id) else {
                    try await family.store.settleParent(child: job.name, account: parent.account, id: id, error: nil)
                    return nil
                }
                let filled = try Self.fill(single, parentID: id, record: record)
                walk = await PageWalker(job: filled, store: store, client: client, maxPages: options.maxPages,
                                        refresh: options.refresh, retry: options.retry, limiter: limiter, quota: quota,
                                        logger: logger,
                                        progress: nil, downloader: downloader, pagesAhead: options.pagesAhead,
                                        parentID: id)
                    .walk(from: WalkStart(startedAt: started, page: nil, nextURL: nil, cursor: nil, position: 0))
                // Interrupted, deferred or cut by `--max-pages`: the parent stays queued as it was.
                if walk.stop == .interrupted || walk.error?.isDeferral == true || walk.error == nil && !walk.stop.isComplete {
                    return (walk, 0)
                }
                if walk.error == nil, walk.stop.isComplete, job.prune {
                    pruned = try await store.pruneChildren(table: job.table, account: job.account, parent: id,
                                                           notSeenSince: started)
                }
            } catch {
                walk.error = walk.error ?? .parent(job: job.name, id: id, error)
            }
            do {
                let error = walk.error?.description
                try await family.store.settleParent(child: job.name, account: parent.account, id: id, error: error)
            } catch {
                walk.error = walk.error ?? .store(job: job.name, path: family.store.path, error)
            }
            return (walk, pruned)
        }
        var failures: [JobFailure] = []
        var deferrals: [JobFailure] = []
        var pruned = 0
        var interrupted = Task.isCancelled
        var cut: Int?
        for case let (walk, prunedHere)?? in outcomes {
            total.merge(walk)
            pruned += prunedHere
            if walk.stop == .interrupted {
                interrupted = true
            } else if let deferral = walk.error, deferral.isDeferral {
                deferrals.append(deferral)
            } else if case let .maxPages(count) = walk.stop, walk.error == nil {
                cut = count
            } else if let error = walk.error {
                walks.failed += 1
                failures.append(error)
            } else {
                walks.walked += 1
            }
        }
        total.counts.deleted += walks.orphansDeleted
        if let first = total.counts.firstMovedChild {
            // Each id is one row: the child of one parent replaced another's.
            total.warnings.append("\(total.counts.movedChildren) child \(total.counts.movedChildren == 1 ? "id was" : "ids were") "
                + "another parent's, and its row moved: \(first); child ids must be unique across parents")
            logger.warning("child ids repeat across parents", metadata: ["job": "\(job.name)", "first": "\(first)"])
        }
        if interrupted {
            total.stop = .interrupted
            total.error = .parentsInterrupted(job: job.name, walked: walks.walked, queued: queued.count)
        } else if let first = failures.first {
            total.stop = .failed
            total.error = .parentsFailed(job: job.name, failed: walks.failed, queued: queued.count, first: first)
        } else if let first = deferrals.first {
            // Those parents stay queued: the first run after the latest of their times walks them.
            total.stop = .deferred
            total.error = .parentsDeferred(job: job.name, deferred: deferrals.count, queued: queued.count,
                                           until: deferrals.compactMap(\.resumeAfter).max() ?? "", first: first)
        } else if let cut {
            // Those parents stay queued: their children were not all walked.
            total.stop = .maxPages(cut)
        } else {
            total.stop = .parents(queued.count)
            total.error = nil
        }
        relay?.walked(JobProgress(job: job.name, page: nil, lastPage: nil, walk: total,
                                  files: downloader?.summary))
        return (total, walks, pruned)
    }

    /// The child job for one parent: each `{parent.<path>}` filled with that value of the
    /// parent's record, a string or a number.
    static func fill(_ job: JobSpec, parentID: String, record: String) throws -> JobSpec {
        let document = try JSONDocument(parsing: Array(record.utf8))
        var filled = job
        for text in job.parentPlaceholders {
            guard let path = JSONPath(text), let value = document.root.value(at: path).flatMap(SinceValue.init) else {
                throw MissingParentValue(path: text)
            }
            filled = filled.filling("parent.\(text)", with: value)
        }
        return filled
    }

    struct MissingParentValue: Error, CustomStringConvertible {
        let path: String
        var description: String { "the parent record has no string or number at '\(path)' for {parent.\(path)}" }
    }
}

extension WalkResult {
    /// Adds a walk of another parent's children to a child job's whole.
    mutating func merge(_ other: WalkResult) {
        pages += other.pages
        pagesNotModified += other.pagesNotModified
        pagesSkipped += other.pagesSkipped
        counts.new += other.counts.new
        counts.updated += other.counts.updated
        counts.unchanged += other.counts.unchanged
        counts.deleted += other.counts.deleted
        counts.movedChildren += other.counts.movedChildren
        counts.addMismatches(other.counts.mismatches)
        counts.firstMovedChild = counts.firstMovedChild ?? other.counts.firstMovedChild
        rejected += other.rejected
        repeated += other.repeated
        elementsWalked += other.elementsWalked
        retries += other.retries
        bytes += other.bytes
        for missing in other.missingPaths where !missingPaths.contains(missing) {
            missingPaths.append(missing)
        }
    }
}
