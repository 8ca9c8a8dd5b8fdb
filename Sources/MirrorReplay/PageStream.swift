import MirrorStore

/// A page larger than `ReplayedPages.chunk`, answered a piece at a time: `first` (its
/// envelope's head, and `[`), then its records from the first, a `piece` at a time in the
/// page's read transaction, then `last`. A piece is read only when its caller asks for it,
/// so an answer holds one piece at a time, whatever the client reads. The read transaction
/// ends with `finish`, which its caller calls however the answer ends.
package struct PageStream: Sendable {
    /// Where reading the records has got to.
    package struct Cursor: Sendable {
        var found = FoundPage.Cursor()

        package init() {}

        /// Whether every record was read.
        package var done: Bool { found.done }
    }

    package let first: [UInt8]
    package let last: [UInt8]
    let page: FoundPage

    /// The records from `cursor` on, about `ReplayedPages.piece` bytes of them, with
    /// `cursor` moved past them (`done` after the last). SQLite's work: it blocks.
    package func piece(_ cursor: inout Cursor) throws -> [UInt8] {
        var piece: [UInt8] = []
        piece.reserveCapacity(1 << 16)
        try page.read(&cursor.found, into: &piece, budget: ReplayedPages.piece)
        return piece
    }

    /// Ends the page's read transaction. SQLite's work: it blocks.
    package func finish() {
        page.finish()
    }
}
