import Foundation
package import Logging
import MirrorExport
import MirrorJobFile
import MirrorModel
import MirrorRemote

/// `mirror run --state`: the run's shard keeps its state in a remote store (`RemoteState`).
package struct RemoteStateOptions: Sendable {
    let store: any ObjectStore
    /// Also push every this long while the jobs run (`--push-every`); only at the end when nil.
    package var pushEvery: Duration?
    /// How long the shard's lease lasts unless renewed (`--lease-time`).
    package var leaseTime: Duration = .seconds(60)

    /// Opens the store `location` names (`s3://bucket/prefix`, `file:///dir`); a location
    /// that cannot be one, or an S3 setting missing from `environment`, is a usage error.
    package init(location: String, environment: [String: String], logger: Logger) throws(UsageError) {
        do {
            store = try StateLocation.open(location, environment: environment, logger: logger)
        } catch {
            throw UsageError(error.description)
        }
    }

    /// The shortest lease: a third of it is the time between renewals.
    package static let shortestLease = Duration.seconds(3)
}

extension Runner {
    /// The state of the selected jobs' shard, its lease taken and its databases pulled; nil
    /// without `--state`. Every job must write to one output folder.
    func beginState(_ selected: [(job: JobSpec, file: JobFile, output: String)], options: Options) async throws -> RemoteState? {
        guard let state = options.state, let output = selected.first?.output else { return nil }
        let folders = Set(selected.map { ($0.output as NSString).standardizingPath })
        guard folders.count == 1 else {
            throw UsageError("--state keeps one output folder's state, and the jobs write to \(folders.count) "
                + "(\(folders.sorted().joined(separator: ", "))): name one with --output")
        }
        var databases: [String] = []
        // A push copies a parent's database before its children's.
        var parents: [String: Set<String>] = [:]
        for entry in selected {
            databases.append(entry.job.database)
            if let name = entry.job.parent, let parent = entry.file.jobs.first(where: { $0.name == name }) {
                databases.append(parent.database)
                parents[entry.job.database, default: []].insert(parent.database)
            }
        }
        let remote = RemoteState(store: state.store, shard: options.shard ?? ShardPlan.Shard.whole, output: output,
                                 databases: databases, parents: parents, leaseTime: state.leaseTime, logger: logger)
        let pulled = try await remote.begin()
        let what = pulled.generation == nil ? "remote state: none yet, the walk starts from the folder"
            : pulled.databases == 0 ? "remote state: the folder is current" : "remote state: pulled"
        logger.info("\(what)",
                    metadata: ["state": "\(state.store.location)", "shard": "\(remote.shard)",
                               "databases": "\(pulled.databases)", "bytes": "\(pulled.bytes)",
                               "generation": "\(pulled.generation.map(String.init) ?? "none")"])
        return remote
    }

    /// Runs `work` while the lease of `remote` is renewed (a lease lost yields `.leaseLost` to
    /// `lost`) and, with `--push-every`, its state pushed at that interval; then pushes once
    /// more, unless the lease was lost. A push that fails is logged and left to the next.
    func keepingState<T: Sendable>(_ remote: RemoteState?, options: Options, lost: AsyncStream<StopCause>.Continuation,
                                   _ work: @escaping @Sendable () async -> T) async -> T {
        guard let remote else { return await work() }
        let logger = logger
        let result = await withTaskGroup(of: T?.self) { group in
            group.addTask {
                await remote.lease.keep()
                if !Task.isCancelled {
                    await remote.leaseLost()
                    logger.error("the lease of the shard was lost to another worker: the run stops and pushes nothing more",
                                 metadata: ["state": "\(remote.store.location)", "lease": "\(remote.lease.key)"])
                    lost.yield(.leaseLost)
                }
                return nil
            }
            if let every = options.state?.pushEvery {
                group.addTask {
                    while (try? await Task.sleep(for: every)) != nil {
                        await Self.push(remote, periodic: true, logger: logger)
                    }
                    return nil
                }
            }
            let result = await work()
            // A push under way ends first: cancelled, it would leave its work half done.
            await remote.close()
            group.cancelAll()
            return result
        }
        await Self.push(remote, periodic: false, logger: logger)
        return result
    }

    private static func push(_ remote: RemoteState, periodic: Bool, logger: Logger) async {
        do {
            guard let pushed = periodic ? try await remote.pushPeriodically() : try await remote.push() else { return }
            logger.info(pushed.generation == nil ? "remote state: nothing changed, nothing pushed" : "remote state: pushed",
                        metadata: ["state": "\(remote.store.location)", "shard": "\(remote.shard)",
                                   "databases": "\(pushed.databases)", "unchanged": "\(pushed.unchanged)",
                                   "files": "\(pushed.files)", "bytes": "\(pushed.bytes)",
                                   "generation": "\(pushed.generation.map(String.init) ?? "unchanged")"])
        } catch {
            logger.error("remote state: cannot push", metadata: ["state": "\(remote.store.location)", "error": "\(error)"])
        }
    }
}
