import MirrorStore
import Synchronization

/// Downloaded files answered lately, kept open with what their index said of them, while the
/// output folder's databases stay at the moment they were found at (`CommitWatcher`): the
/// next answer of the same file then neither reads an index nor opens a folder, and needs no
/// thread of the pool, as nginx's `open_file_cache` does. A commit to any database, or a
/// database added or removed, lets go of them all. Each answer still asks `lstat` whether the
/// file's path leads to the file kept (`ServedFiles.Found.stillThere()`), so a file removed,
/// moved away, or another put in its place, is found anew.
///
/// At most `limit` files are kept; one more lets go of another, whichever comes first.
final class OpenedFiles: Sendable {
    private struct State {
        var moment: CommitWatcher.Moment?
        var files: [String: ServedFiles.Found] = [:]
    }

    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// The file kept for `relative` when the databases were at `moment`; nil when none is.
    /// At another moment than the one kept, everything kept is let go.
    func found(_ relative: String, at moment: CommitWatcher.Moment) -> ServedFiles.Found? {
        let (found, dropped) = state.withLock { state -> (ServedFiles.Found?, [String: ServedFiles.Found]) in
            if state.moment == moment { return (state.files[relative], [:]) }
            state.moment = moment
            defer { state.files = [:] }
            return (nil, state.files)
        }
        // Descriptors are closed here, with no lock held, as the last holder lets go.
        _ = dropped
        return found
    }

    /// Keeps `found` for `relative`, found in databases that were at `moment` before they
    /// were read, while that is still the moment kept.
    func keep(_ found: ServedFiles.Found, as relative: String, at moment: CommitWatcher.Moment) {
        guard limit > 0 else { return }
        let dropped = state.withLock { state -> ServedFiles.Found? in
            guard state.moment == moment else { return nil }
            var dropped: ServedFiles.Found?
            if state.files[relative] == nil, state.files.count >= limit {
                dropped = state.files.remove(at: state.files.startIndex).value
            }
            state.files[relative] = found
            return dropped
        }
        _ = dropped
    }

    /// How many files are kept open now.
    var count: Int {
        state.withLock { $0.files.count }
    }
}
