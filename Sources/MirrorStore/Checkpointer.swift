import Dispatch
import GRDB
import Synchronization

/// Copies a database's WAL into its file beside the writer, not in its way. A store's
/// writer commits with SQLite's automatic checkpoint off (`wal_autocheckpoint = 0`);
/// after every `interval` bytes of pages stored, this copies what it can (a passive
/// checkpoint: it waits for no reader and no writer) on a connection and a thread of its
/// own. Done by the commit of every sixteenth page, as SQLite does by default, the copy
/// and its fsyncs were a tenth of a page walk's CPU, on the path every page waits on.
///
/// SQLite writes the WAL from its start again only when a transaction begins with every
/// frame copied, which a checkpoint beside a busy writer never sees: the WAL grew to
/// twice the database (235 MB for a 108 MB walk), each frame written to a new block of the
/// file, at the cost of the file system's allocation. So once every `catchUpInterval`
/// bytes the writer itself copies what is left (`catchUpDue`), a few commits' frames, and
/// its next transaction starts the WAL over, in blocks the file has (24 MB at most on that
/// walk, which took a tenth less time and CPU).
final class Checkpointer: Sendable {
    /// Bytes of pages stored between two checkpoints: about SQLite's own 1,000 WAL pages.
    static let interval = 4 << 20

    private let path: String
    /// Runs one checkpoint at a time, off the writer's and the tasks' threads: a checkpoint
    /// blocks on its writes and fsyncs.
    private let queue = DispatchQueue(label: "mirror.checkpoint")
    /// Its own connection, opened at the first checkpoint; used on `queue` only.
    private let connection = Mutex<DatabaseQueue?>(nil)

    private struct State {
        /// Bytes stored since the last checkpoint began.
        var stored = 0
        var running = false
        /// Bytes stored since the writer last caught up (see `catchUpDue`).
        var sinceCatchUp = 0
    }

    private let state = Mutex(State())

    init(path: String) {
        self.path = path
    }

    /// Counts `bytes` of pages stored; past `interval` since the last checkpoint began,
    /// begins one unless one is under way.
    func stored(bytes: Int) {
        let begin = state.withLock { state in
            state.stored += bytes
            state.sinceCatchUp += bytes
            guard state.stored >= Self.interval, !state.running else { return false }
            state.stored = 0
            state.running = true
            return true
        }
        guard begin else { return }
        queue.async { [self] in
            defer { state.withLock { $0.running = false } }
            // A checkpoint that cannot run leaves the WAL to the next one, or to the last
            // (`TableStore.checkpoint`): nothing is lost either way.
            try? connection.withLock { connection in
                if connection == nil {
                    var configuration = Configuration()
                    configuration.busyMode = .immediateError
                    connection = try DatabaseQueue(path: path, configuration: configuration)
                }
                try connection?.writeWithoutTransaction { db in
                    _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)")
                }
            }
        }
    }

    /// Bytes of pages stored between two catch-ups of the writer: the WAL takes about twice
    /// as many. (With 32 MB it grew to 93 MB, for the same time.)
    static let catchUpInterval = 8 << 20

    /// Whether the writer should copy what the last checkpoints left before its next
    /// commit (see above): true once every `catchUpInterval` bytes, when no checkpoint is
    /// under way.
    func catchUpDue() -> Bool {
        state.withLock { state in
            guard state.sinceCatchUp >= Self.catchUpInterval, !state.running else { return false }
            state.sinceCatchUp = 0
            return true
        }
    }

    /// Waits for a checkpoint under way to end.
    func idle() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            queue.async { done.resume() }
        }
    }
}
