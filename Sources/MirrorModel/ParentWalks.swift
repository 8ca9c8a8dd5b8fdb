/// What a child job's run did with its parents.
package struct ParentWalks: Sendable, Codable, Equatable {
    /// Parents whose children were walked whole.
    package var walked = 0
    /// Parents whose walk failed: queued, and walked again by the next run.
    package var failed = 0
    /// Children removed because their parent is gone (deleted or pruned).
    package var orphansDeleted = 0

    package init(walked: Int = 0, failed: Int = 0, orphansDeleted: Int = 0) {
        self.walked = walked
        self.failed = failed
        self.orphansDeleted = orphansDeleted
    }
}
