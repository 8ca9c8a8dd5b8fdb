import MirrorModel
import MirrorStore
import Synchronization

/// The databases a run has open. A job takes its database when it starts and gives it back
/// when it ends; jobs running at once on one file share one store, and the last of them to
/// end gets the store back to finish and let go. So a run holds no more databases open than
/// it runs jobs at once, however many jobs it has.
final class OpenStores: Sendable {
    private let stores = Mutex<[String: (store: TableStore, users: Int)]>([:])

    /// The store of the database at `path`, opened unless a running job has it open. The
    /// database is opened and migrated outside the lock, so a job taking another database
    /// never waits for it; two jobs that open one file at the same moment both open it, and
    /// the second to finish joins the first's store and drops its own.
    func take(_ path: String) throws -> TableStore {
        if let open = join(path) { return open }
        let opened = try TableStore(path: path)
        return stores.withLock { stores in
            if let open = stores[path] {
                stores[path] = (open.store, open.users + 1)
                return open.store
            }
            stores[path] = (opened, 1)
            return opened
        }
    }

    private func join(_ path: String) -> TableStore? {
        stores.withLock { stores in
            guard let open = stores[path] else { return nil }
            stores[path] = (open.store, open.users + 1)
            return open.store
        }
    }

    /// A job is done with the database at `path`: its store if no other running job uses
    /// it, to be finished and let go (it closes when its last reference goes).
    func giveBack(_ path: String) -> TableStore? {
        stores.withLock { stores in
            guard let open = stores[path] else { return nil }
            if open.users > 1 {
                stores[path] = (open.store, open.users - 1)
                return nil
            }
            stores[path] = nil
            return open.store
        }
    }
}
