import Foundation
import GRDB
import Synchronization

/// Tells whether anything was committed to an output folder's databases between two
/// moments, cheaply enough to ask before every answer. A moment is, for each database of
/// the folder, the file its name leads to and `PRAGMA data_version` read on a read-only
/// connection kept open for that file: SQLite changes it whenever another connection, of
/// this process or of another, commits to the file (a run, a `DELETE` typed in sqlite3).
/// A database added, removed or made again (another file under the name) changes the
/// moment too. The connections hold no transaction between two questions: they keep no run
/// from writing or checkpointing.
package final class CommitWatcher: Sendable {
    /// The folder's databases at one moment. Two equal moments saw no commit between them.
    package struct Moment: Sendable, Equatable {
        fileprivate let stamps: [Stamp]
    }

    fileprivate struct Stamp: Sendable, Equatable {
        let name: String
        let file: DatabaseFiles.Identity
        let version: Int
    }

    /// The connection kept for the file a database's name led to when it was opened.
    private struct Watch: Sendable {
        let file: DatabaseFiles.Identity
        let queue: DatabaseQueue
    }

    package let output: String
    private let watches = Mutex<[String: Watch]>([:])

    package init(output: String) {
        self.output = output
    }

    /// The moment now; nil when a database cannot be asked, and then no moment is the same
    /// as another.
    package func moment() -> Moment? {
        var stamps: [Stamp] = []
        for (name, file) in DatabaseFiles.identified(in: output) {
            guard let version = version(of: name, file: file) else { return nil }
            stamps.append(Stamp(name: name, file: file, version: version))
        }
        return Moment(stamps: stamps)
    }

    /// `PRAGMA data_version` of the database `name`, on the connection kept for `file`. A
    /// connection kept for another file (the database was made again) is closed, through
    /// SQLite, and one is opened for this one.
    private func version(of name: String, file: DatabaseFiles.Identity) -> Int? {
        var queue = watches.withLock { watches in watches[name].flatMap { $0.file == file ? $0.queue : nil } }
        if queue == nil {
            let path = (output as NSString).appendingPathComponent(name)
            guard let opened = try? DatabaseQueue(path: path, configuration: RecordReader.readOnly) else { return nil }
            // One connection a file: versions read on two would not compare. Of two opened
            // at once, the first kept is the one asked.
            queue = watches.withLock { watches in
                if let kept = watches[name], kept.file == file { return kept.queue }
                watches[name] = Watch(file: file, queue: opened)
                return opened
            }
        }
        return try? queue?.inDatabase { db in try Int.fetchOne(db.cachedStatement(sql: "PRAGMA data_version")) }
    }
}
