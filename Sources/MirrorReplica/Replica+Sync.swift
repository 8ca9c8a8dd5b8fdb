public import Foundation
import Crypto
import MirrorFiles
import MirrorModel
import Synchronization

extension Replica {
    /// How many objects are fetched at once.
    static let transfersAtOnce = 4

    /// Brings the replica to the generation `source`'s `manifest.json` names, and tells
    /// what it did. See `syncing(from:)` for progress as it goes.
    @discardableResult
    public func sync(from source: URL) async throws -> SyncOutcome {
        try await sync(from: source, progress: nil)
    }

    /// Syncs as `sync(from:)` does, reporting progress (bytes fetched of those to fetch)
    /// as it goes, then the outcome. Stopping the iteration (or cancelling its task) stops
    /// the sync cleanly: the replica keeps the generation it had, and what was fetched is
    /// kept for the next sync to resume from.
    public func syncing(from source: URL) -> AsyncThrowingStream<SyncEvent, any Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingNewest(64)) { continuation in
            let task = Task {
                do {
                    let outcome = try await self.sync(from: source) { continuation.yield(.progress($0)) }
                    continuation.yield(.finished(outcome))
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func sync(from url: URL, progress: (@Sendable (SyncProgress) -> Void)?) async throws(ReplicaError) -> SyncOutcome {
        let source = try source(at: url)
        do throws(ReplicaError) {
            let outcome = try await sync(from: source, progress: progress)
            await source.close()
            return outcome
        } catch {
            await source.close()
            throw error
        }
    }

    private func sync(from source: any SyncSource, progress: (@Sendable (SyncProgress) -> Void)?) async throws(ReplicaError) -> SyncOutcome {
        try layout.prepare()
        let lock = try await syncLock()
        defer { try? FileSystem.close(lock) }

        let held = layout.current()
        let record = held.flatMap { layout.record(of: $0) }
        let asked = record?.source == source.shown ? record?.etag : nil
        let fetchedManifest = try await source.manifest(unless: asked)
        guard let manifest = fetchedManifest else {
            // An HTTP 304 (asked only with the held generation's ETag): it is the one the manifest names.
            let generation = held ?? ""
            layout.removeOld(keeping: generation, wanted: [])
            return SyncOutcome(generation: generation, changed: false, fetchedObjects: 0, fetchedBytes: 0,
                               keptObjects: record?.objects.count ?? 0, manifestUnchanged: true)
        }
        let plan = try SyncPlan.read(manifest.bytes)
        let generation = plan.generation
        if generation == held, var record {
            // The same objects under a manifest written again: the ETag to ask with next time.
            record.etag = manifest.etag
            record.source = source.shown
            try layout.write(record, into: layout.folder(of: generation))
            layout.removeOld(keeping: generation, wanted: [])
            return SyncOutcome(generation: generation, changed: false, fetchedObjects: 0, fetchedBytes: 0,
                               keptObjects: plan.objects.count, manifestUnchanged: manifest.etag == asked)
        }
        let building = layout.folder(of: generation) + ".partial"
        try? FileManager.default.removeItem(atPath: building)
        do {
            try FileManager.default.createDirectory(atPath: building, withIntermediateDirectories: true)
        } catch {
            throw .folder("cannot make \(building): \(SystemError.reason(error))")
        }
        // Objects the replica holds already, by SHA-256: linked into the new generation.
        var holding: [String: String] = [:]
        if let held, let record {
            for object in record.objects { holding[object.sha256] = layout.folder(of: held) + "/" + object.path }
        }
        var kept = 0
        var fetching: [SyncPlan.Object] = []
        // Objects whose bytes another object of the plan fetches: linked to it once it is in.
        var copies: [(path: String, of: String)] = []
        var fetched: [String: String] = [:]
        for object in plan.objects {
            let target = building + "/" + object.path
            try makeParent(of: target)
            if let existing = holding[object.sha256], (try? FileSystem.link(existing, at: target)) != nil {
                kept += 1
            } else if let first = fetched[object.sha256] {
                copies.append((object.path, first))
            } else {
                fetched[object.sha256] = object.path
                fetching.append(object)
            }
        }
        kept += copies.count
        let total = Int64(fetching.reduce(0) { $0 + $1.bytes })
        let counter = Progress(total: total, objects: plan.objects.count, kept: kept, report: progress)
        counter.report()
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var next = fetching.makeIterator()
                func start() {
                    guard let object = next.next() else { return }
                    group.addTask { try await self.fetch(object, from: source, into: building, counter: counter) }
                }
                for _ in 0..<Self.transfersAtOnce { start() }
                while try await group.next() != nil { start() }
            }
            for copy in copies {
                do throws(FileError) {
                    try FileSystem.link(building + "/" + copy.of, at: building + "/" + copy.path)
                } catch {
                    throw ReplicaError.folder("cannot link \(copy.path) to \(copy.of): \(SystemError.reason(error))")
                }
            }
            try finish(building, as: generation, plan: plan, source: source, etag: manifest.etag, manifest: manifest.bytes)
        } catch {
            try? FileManager.default.removeItem(atPath: building)
            if let error = error as? ReplicaError { throw error }
            throw Task.isCancelled ? .cancelled : .folder("\(error)")
        }
        return SyncOutcome(generation: generation, changed: true, fetchedObjects: fetching.count,
                           fetchedBytes: counter.done, keptObjects: kept, manifestUnchanged: false)
    }

    /// How long a sync waits for the lock before it says another is under way: a process
    /// being started (`posix_spawn`) holds a copy of every descriptor until it execs, the
    /// lock's too, for a moment.
    static let lockPatience: Duration = .seconds(2)

    /// The sync's lock: one sync (or catch-up) of a folder at a time. A lock held by someone
    /// else is tried again every 10 ms for `lockPatience`.
    func syncLock() async throws(ReplicaError) -> Int32 {
        let clock = ContinuousClock()
        let deadline = clock.now + Self.lockPatience
        while true {
            do throws(ReplicaError) {
                return try syncLockNow()
            } catch {
                guard case .busy = error, clock.now < deadline, !Task.isCancelled else { throw error }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    private func syncLockNow() throws(ReplicaError) -> Int32 {
        let path = layout.path + "/.sync.lock"
        let descriptor: Int32
        do throws(FileError) {
            descriptor = try FileSystem.openLockFile(path, followingLinks: false)
        } catch {
            throw .folder("cannot open \(path): \(SystemError.reason(error))")
        }
        do throws(FileError) {
            try FileSystem.lock(descriptor, waiting: false)
        } catch {
            try? FileSystem.close(descriptor)
            throw .busy(layout.path)
        }
        return descriptor
    }

    private func makeParent(of path: String) throws(ReplicaError) {
        let parent = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw .folder("cannot make \(parent): \(SystemError.reason(error))")
        }
    }

    /// Fetches `object` into `partial/<sha256>` (resuming what an earlier sync left there),
    /// checks its size and SHA-256, and moves it into the generation being made.
    private func fetch(_ object: SyncPlan.Object, from source: any SyncSource, into building: String,
                       counter: Progress) async throws(ReplicaError) {
        let piece = layout.partial + "/" + object.sha256
        let descriptor: Int32
        do throws(FileError) {
            descriptor = try FileSystem.openLockFile(piece, followingLinks: false)
        } catch {
            throw .folder("cannot open \(piece): \(SystemError.reason(error))")
        }
        defer { try? FileSystem.close(descriptor) }
        // What an earlier sync fetched of it: hashed again, and asked for from where it ends.
        var have = (try? FileSystem.size(descriptor)) ?? 0
        if have > object.bytes { have = 0 }
        do throws(FileError) {
            try FileSystem.truncate(descriptor, to: have)
            try FileSystem.seek(descriptor, to: have)
        } catch {
            throw .folder("cannot write \(piece): \(SystemError.reason(error))")
        }
        counter.add(have)
        let fetched: Fetched
        if have == object.bytes, have > 0 {
            // Fetched whole before a sync stopped: only checked.
            do throws(FileError) {
                fetched = Fetched(startedAt: have, sha256: Hex.string(try hashed(descriptor, upTo: have).finalize()))
            } catch {
                throw .folder("cannot read \(piece): \(SystemError.reason(error))")
            }
        } else {
            fetched = try await source.fetch(object.remote, into: descriptor, holding: have) { counter.add($0) }
            if fetched.startedAt == 0 && have > 0 { counter.add(-have) }
        }
        let size: Int
        do throws(FileError) {
            size = try FileSystem.size(descriptor)
            try FileSystem.flush(descriptor)
        } catch {
            throw .folder("cannot write \(piece): \(SystemError.reason(error))")
        }
        let digest = fetched.sha256
        guard size == object.bytes, digest == object.sha256 else {
            try? FileSystem.remove(piece)
            let reason = size != object.bytes
                ? "\(size) bytes arrived, the manifest says \(object.bytes)"
                : "its SHA-256 is \(digest), the manifest says \(object.sha256)"
            throw .refused(path: object.path, reason: reason)
        }
        do throws(FileError) {
            try FileSystem.rename(piece, to: building + "/" + object.path)
        } catch {
            throw .folder("cannot move \(object.path) into the new generation: \(SystemError.reason(error))")
        }
        counter.finished()
    }

    /// Writes the generation's record and readers' file, flushes it, renames it into
    /// place, points `current` at it, and removes what is no longer wanted.
    private func finish(_ building: String, as generation: String, plan: SyncPlan, source: any SyncSource, etag: String,
                        manifest: [UInt8]) throws(ReplicaError) {
        do {
            try WholeFile.write(Data(manifest), to: building + "/manifest.json")
            let readers = try FileSystem.createOrEmpty(building + "/" + Generation.readersName)
            try FileSystem.close(readers)
        } catch {
            throw .folder("cannot write into \(building): \(SystemError.reason(error))")
        }
        try layout.write(GenerationRecord(source: source.shown, etag: etag, objects: plan.objects), into: building)
        var folders: Set<String> = [building]
        for object in plan.objects {
            folders.insert(((building + "/" + object.path) as NSString).deletingLastPathComponent)
        }
        for folder in folders { ReplicaFolder.flush(folder: folder) }
        let final = layout.folder(of: generation)
        try? FileManager.default.removeItem(atPath: final)
        do throws(FileError) {
            try FileSystem.rename(building, to: final)
        } catch {
            throw .folder("cannot rename \(building) to \(final): \(SystemError.reason(error))")
        }
        ReplicaFolder.flush(folder: layout.generations)
        try layout.makeCurrent(generation)
        layout.removeOld(keeping: generation, wanted: [])
    }
}

/// Bytes and objects a sync has done, reported as they change.
final class Progress: Sendable {
    private struct State {
        var done: Int64 = 0
        var objects: Int
    }

    private let state: Mutex<State>
    let total: Int64
    let objects: Int
    private let reportTo: (@Sendable (SyncProgress) -> Void)?

    init(total: Int64, objects: Int, kept: Int, report: (@Sendable (SyncProgress) -> Void)?) {
        self.total = total
        self.objects = objects
        state = Mutex(State(objects: kept))
        reportTo = report
    }

    var done: Int64 { state.withLock { $0.done } }

    func add(_ bytes: Int) {
        guard bytes != 0 else { return }
        state.withLock { $0.done += Int64(bytes) }
        report()
    }

    func finished() {
        state.withLock { $0.objects += 1 }
        report()
    }

    func report() {
        guard let reportTo else { return }
        let now = state.withLock { $0 }
        reportTo(SyncProgress(bytesDone: now.done, bytesTotal: total, objectsDone: now.objects, objectsTotal: objects))
    }
}
