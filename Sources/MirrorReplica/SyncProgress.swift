/// How far a sync has got: bytes fetched of the bytes it must fetch (objects the replica
/// already holds count for nothing), and objects in place of the generation's objects.
public struct SyncProgress: Sendable, Equatable {
    public let bytesDone: Int64
    public let bytesTotal: Int64
    public let objectsDone: Int
    public let objectsTotal: Int
}

/// What a sync did.
public struct SyncOutcome: Sendable, Equatable {
    /// The generation the replica holds now.
    public let generation: String
    /// Whether it is another generation than the one the replica held before.
    public let changed: Bool
    /// Objects fetched from the source, and their bytes.
    public let fetchedObjects: Int
    public let fetchedBytes: Int64
    /// Objects of the new generation the replica already held (linked, not fetched).
    public let keptObjects: Int
    /// Whether the source's manifest itself was unchanged (an HTTP 304, or the same bytes).
    public let manifestUnchanged: Bool
}

/// What `Replica.syncing(from:)` reports: progress as it goes, then the outcome.
public enum SyncEvent: Sendable, Equatable {
    case progress(SyncProgress)
    case finished(SyncOutcome)
}
