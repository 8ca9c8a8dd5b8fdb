import Foundation
import GRDB
import Logging
@testable import MirrorHTTP
import MirrorJobFile
import MirrorModel
@testable import MirrorStore
@testable import MirrorRemote
import MirrorTestSupport
import Synchronization
import Testing

private let quiet = Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() })

private func temporaryFolder() throws -> String {
    let folder = NSTemporaryDirectory() + "mirror-state-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    return folder
}

/// A database at `path` with the rows `values` in table `t`.
private func database(_ path: String, _ values: [String]) throws {
    try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    let queue = try DatabaseQueue(path: path)
    try queue.write { db in
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS t (v TEXT)")
        for value in values { try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [value]) }
    }
}

private func rows(_ path: String) throws -> [String] {
    try DatabaseQueue(path: path).read { try String.fetchAll($0, sql: "SELECT v FROM t ORDER BY rowid") }
}

private let whole = ShardPlan.Shard.whole

/// What every store must do for a lease: one holder at a time, a lapsed lease taken over,
/// and the lapsed holder's renewal refused.
func leaseContract(_ store: any ObjectStore) async throws {
    // Both read one clock, which the test moves: no expiry depends on how fast the machine is.
    let time = ManualClock()
    let first = ShardLease(store: store, key: "shards/0-of-1/lease.json", time: .seconds(60), clock: time.clock)
    let second = ShardLease(store: store, key: "shards/0-of-1/lease.json", time: .seconds(60), clock: time.clock)
    try await first.take()
    time.advance(by: .seconds(59))
    await #expect(throws: LeaseHeldError.self) { try await second.take() }
    #expect(try await first.renew())
    // Renewed: 59 seconds on, still held. Then the first stops renewing: after its time the
    // second takes it, and the first's renewal fails.
    time.advance(by: .seconds(59))
    await #expect(throws: LeaseHeldError.self) { try await second.take() }
    time.advance(by: .seconds(2))
    try await second.take()
    #expect(try await first.renew() == false)
    await #expect(throws: LeaseHeldError.self) { try await first.take() }
    // Giving back a lease that is another's leaves it.
    await first.release()
    #expect(try await store.read("shards/0-of-1/lease.json") != nil)
    await second.release()
    #expect(try await store.read("shards/0-of-1/lease.json") == nil)
    try await first.take()
    await first.release()
}

/// What every store must do for a lease its worker keeps: renewed a third of its time apart,
/// it is held however long the worker lives; once the worker is gone (killed: nothing renews
/// it, nothing gives it back) it is held until its time has passed since the last renewal,
/// then taken over; and the gone worker's keeper, were it to wake, finds it lost and returns.
func leaseKeepContract(_ store: any ObjectStore) async throws {
    let time = ManualClock()
    let key = "shards/0-of-1/lease.json"
    let first = ShardLease(store: store, key: key, time: .seconds(60), clock: time.clock)
    let second = ShardLease(store: store, key: key, time: .seconds(60), clock: time.clock)
    try await first.take()
    let keeper = Task { await first.keep() }
    // Two minutes, six renewals: each written before the keeper waits 20 s again.
    for _ in 1...6 {
        time.advance(to: await time.sleeping(beyond: .seconds(19), within: .seconds(20)))
    }
    _ = await time.sleeping(beyond: .seconds(19), within: .seconds(20))
    await #expect(throws: LeaseHeldError.self) { try await second.take() }
    keeper.cancel()
    await keeper.value
    time.advance(by: .seconds(59))
    await #expect(throws: LeaseHeldError.self) { try await second.take() }
    time.advance(by: .seconds(2))
    try await second.take()
    let lost = Task { await first.keep() }
    time.advance(to: await time.sleeping(beyond: .seconds(19), within: .seconds(20)))
    await lost.value
    #expect(try await second.renew())
    await second.release()
    #expect(try await store.read(key) == nil)
}

/// What every store must do for a lease given back: a worker whose lease lapsed and was taken
/// over just before its release reached the store leaves the new holder's lease as it is.
func leaseReleaseContract(_ inner: any ObjectStore) async throws {
    let time = ManualClock()
    let key = "shards/0-of-1/lease.json"
    let store = RacedStore(inner: inner)
    let first = ShardLease(store: store, key: key, time: .seconds(60), clock: time.clock)
    let second = ShardLease(store: inner, key: key, time: .seconds(60), clock: time.clock)
    try await first.take()
    // The first worker stops renewing; past its time the second takes the lease over, just as
    // the first's release reaches the store.
    time.advance(by: .seconds(61))
    let taken = LeaseBytes()
    store.beforeDelete.withLock { hook in
        hook = {
            try await second.take()
            let bytes = try await inner.read(key)?.bytes
            taken.bytes.withLock { $0 = bytes }
        }
    }
    await first.release()
    let held = try #require(taken.bytes.withLock { $0 }, "the second worker never took the lease")
    #expect(try await inner.read(key)?.bytes == held)
    #expect(try await second.renew())
    await second.release()
    #expect(try await inner.read(key) == nil)
}

/// The bytes of a lease, as a store held them at some moment.
private final class LeaseBytes: Sendable {
    let bytes = Mutex<[UInt8]?>(nil)
}

/// A store that runs `beforeDelete` once, just before a delete goes on to the store: another
/// worker acting between a release's decision and its delete.
private final class RacedStore: ObjectStore {
    let inner: any ObjectStore
    let beforeDelete = Mutex<(@Sendable () async throws -> Void)?>(nil)
    var location: String { inner.location }

    init(inner: any ObjectStore) {
        self.inner = inner
    }

    private func raced() async throws(StateError) {
        guard let hook = beforeDelete.withLock({ hook in defer { hook = nil }; return hook }) else { return }
        do {
            try await hook()
        } catch {
            throw StateError("the other worker failed: \(error)")
        }
    }

    func read(_ key: String) async throws(StateError) -> (bytes: [UInt8], tag: String)? { try await inner.read(key) }
    func write(_ key: String, _ bytes: [UInt8], condition: S3Client.Condition?) async throws(StateError) -> String {
        try await inner.write(key, bytes, condition: condition)
    }
    func upload(_ key: String, fileAt path: String) async throws(StateError) { try await inner.upload(key, fileAt: path) }
    func download(_ key: String, toFileAt path: String) async throws(StateError) -> S3Client.Downloaded? {
        try await inner.download(key, toFileAt: path)
    }
    func delete(_ key: String) async throws(StateError) {
        try await raced()
        try await inner.delete(key)
    }
    func delete(_ key: String, ifTag tag: String) async throws(StateError) {
        try await raced()
        try await inner.delete(key, ifTag: tag)
    }
    func list(_ prefix: String) async throws(StateError) -> [String] { try await inner.list(prefix) }
}

/// What every store must do for a state: pushed, pulled into an empty folder exactly,
/// nothing written when nothing changed, and a manifest written by another worker in the
/// meantime refusing the push.
func pushPullContract(_ store: any ObjectStore) async throws {
    let folder = try temporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    try database(folder + "/one/a.sqlite", ["x", "y"])
    try database(folder + "/one/sub/b.sqlite", ["z"])
    let one = RemoteState(store: store, shard: whole, output: folder + "/one", databases: ["a.sqlite", "sub/b.sqlite"],
                          leaseTime: .seconds(30), logger: quiet)
    #expect(try await one.begin() == RemoteState.Pulled())
    let pushed = try await one.push()
    #expect(pushed.databases == 2 && pushed.unchanged == 0 && pushed.generation == 1)
    // Unchanged: nothing is sent and no generation written.
    let again = try await one.push()
    #expect(again == RemoteState.Pushed(databases: 0, unchanged: 2, files: 0, bytes: 0, generation: nil))
    try database(folder + "/one/a.sqlite", ["w"])
    let changed = try await one.push()
    #expect(changed.databases == 1 && changed.unchanged == 1 && changed.generation == 2)
    let objects = try await store.list("databases/")
    #expect(objects.count == 2, "the superseded copy of a.sqlite is removed: \(objects)")
    await one.end()

    // An empty folder takes generation 2.
    let two = RemoteState(store: store, shard: whole, output: folder + "/two", databases: ["a.sqlite", "sub/b.sqlite"],
                          leaseTime: .seconds(30), logger: quiet)
    let pulled = try await two.begin()
    #expect(pulled.databases == 2 && pulled.generation == 2)
    #expect(try rows(folder + "/two/a.sqlite") == ["x", "y", "w"])
    #expect(try rows(folder + "/two/sub/b.sqlite") == ["z"])
    await two.end()

    // A folder that is current pulls nothing, even though its file changed since.
    try database(folder + "/two/a.sqlite", ["v"])
    let current = RemoteState(store: store, shard: whole, output: folder + "/two", databases: ["a.sqlite"],
                              leaseTime: .seconds(30), logger: quiet)
    #expect(try await current.begin().databases == 0)
    #expect(try rows(folder + "/two/a.sqlite") == ["x", "y", "w", "v"])
    // Another worker writes the manifest meanwhile: this push is refused, the folder keeps its rows.
    let key = "shards/0-of-1/manifest.json"
    let written = try #require(try await store.read(key))
    try await store.write(key, written.bytes + Array(" ".utf8), condition: nil)
    await #expect(throws: StateError.self) { try await current.push() }
    #expect(await current.summary.failure?.contains("another worker wrote shards/0-of-1/manifest.json") == true)
    #expect(try rows(folder + "/two/a.sqlite") == ["x", "y", "w", "v"])
    await current.end()
}

/// A folder store whose manifest writes fail once `cut` is set: a push that dies after its
/// copies went up and before its manifest did, as one killed there does.
private final class CutStore: ObjectStore {
    let inner: any ObjectStore
    let cut = Mutex(false)
    var location: String { inner.location }

    init(inner: any ObjectStore) {
        self.inner = inner
    }

    func read(_ key: String) async throws(StateError) -> (bytes: [UInt8], tag: String)? { try await inner.read(key) }
    func write(_ key: String, _ bytes: [UInt8], condition: S3Client.Condition?) async throws(StateError) -> String {
        if key.hasSuffix("manifest.json"), cut.withLock({ $0 }) { throw StateError("cut") }
        return try await inner.write(key, bytes, condition: condition)
    }
    func upload(_ key: String, fileAt path: String) async throws(StateError) { try await inner.upload(key, fileAt: path) }
    func download(_ key: String, toFileAt path: String) async throws(StateError) -> S3Client.Downloaded? {
        try await inner.download(key, toFileAt: path)
    }
    func delete(_ key: String) async throws(StateError) { try await inner.delete(key) }
    func delete(_ key: String, ifTag tag: String) async throws(StateError) { try await inner.delete(key, ifTag: tag) }
    func list(_ prefix: String) async throws(StateError) -> [String] { try await inner.list(prefix) }
}

/// A folder store that runs `meanwhile` once, during its first upload: what a walk does while
/// a slow store takes a copy.
private final class SlowStore: ObjectStore {
    let inner: any ObjectStore
    let meanwhile: Mutex<(@Sendable () throws -> Void)?>
    var location: String { inner.location }

    init(inner: any ObjectStore, meanwhile: @escaping @Sendable () throws -> Void) {
        self.inner = inner
        self.meanwhile = Mutex(meanwhile)
    }

    func read(_ key: String) async throws(StateError) -> (bytes: [UInt8], tag: String)? { try await inner.read(key) }
    func write(_ key: String, _ bytes: [UInt8], condition: S3Client.Condition?) async throws(StateError) -> String {
        try await inner.write(key, bytes, condition: condition)
    }
    func upload(_ key: String, fileAt path: String) async throws(StateError) {
        if let meanwhile = meanwhile.withLock({ $0.take() }) {
            do { try meanwhile() } catch { throw StateError("\(error)") }
        }
        try await inner.upload(key, fileAt: path)
    }
    func download(_ key: String, toFileAt path: String) async throws(StateError) -> S3Client.Downloaded? {
        try await inner.download(key, toFileAt: path)
    }
    func delete(_ key: String) async throws(StateError) { try await inner.delete(key) }
    func delete(_ key: String, ifTag tag: String) async throws(StateError) { try await inner.delete(key, ifTag: tag) }
    func list(_ prefix: String) async throws(StateError) -> [String] { try await inner.list(prefix) }
}

@Suite("remote state in a folder", .timeLimit(.minutes(6)))
struct RemoteStateTests {
    @Test("a push is one cut: a parent's database is copied before its children's, whatever their names, and sent after")
    func parentsBeforeChildren() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // The parent's file holds the parents still queued (2), the child's the children stored (1's).
        try database(folder + "/one/t_post.sqlite", ["2"])
        try database(folder + "/one/t_comment.sqlite", ["c1-1"])
        // While the first copy goes up, the walk stores parent 2's children, then settles it.
        let store = SlowStore(inner: try StateLocation.open("file://\(folder)/store", environment: [:], logger: quiet)) {
            try database(folder + "/one/t_comment.sqlite", ["c2-1", "c2-2"])
            try DatabaseQueue(path: folder + "/one/t_post.sqlite").write { try $0.execute(sql: "DELETE FROM t WHERE v = '2'") }
        }
        let one = RemoteState(store: store, shard: whole, output: folder + "/one",
                              databases: ["t_comment.sqlite", "t_post.sqlite"],
                              parents: ["t_comment.sqlite": ["t_post.sqlite"]], leaseTime: .seconds(30), logger: quiet)
        _ = try await one.begin()
        #expect(try await one.push().databases == 2)
        await one.end()

        let two = RemoteState(store: store, shard: whole, output: folder + "/two",
                              databases: ["t_comment.sqlite", "t_post.sqlite"],
                              parents: ["t_comment.sqlite": ["t_post.sqlite"]], leaseTime: .seconds(30), logger: quiet)
        #expect(try await two.begin().databases == 2)
        // Parent 2 still queued, its children not yet there: the next run walks them.
        #expect(try rows(folder + "/two/t_post.sqlite") == ["2"])
        #expect(try rows(folder + "/two/t_comment.sqlite") == ["c1-1"])
        await two.end()
    }

    @Test("a manifest whose object or path leads outside databases/ or the folder is refused before anything is replaced")
    func objectOutsideStore() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try StateLocation.open("file://\(folder)/store", environment: [:], logger: quiet)
        try database(folder + "/one/a.sqlite", ["x"])
        let one = RemoteState(store: store, shard: whole, output: folder + "/one", databases: ["a.sqlite"],
                              leaseTime: .seconds(30), logger: quiet)
        _ = try await one.begin()
        _ = try await one.push()
        await one.end()
        // A file outside the store, named with its true size and SHA-256.
        try database(folder + "/secret.sqlite", ["secret"])
        let secret = try S3Client.Downloaded.read(folder + "/secret.sqlite")
        let key = "shards/0-of-1/manifest.json"
        let original = try StateManifest.decode(try #require(try await store.read(key)).bytes, location: "", key: key)
        try database(folder + "/two/a.sqlite", ["mine"])
        for (object, path) in [("../secret.sqlite", "a.sqlite"), ("databases/../../secret.sqlite", "a.sqlite"),
                               ("/etc/hostname", "a.sqlite"), ("files/ab/secret.sqlite", "a.sqlite"),
                               (original.databases[0].object, "../a.sqlite")] {
            var manifest = original
            manifest.generation += 1
            manifest.databases[0].object = object
            manifest.databases[0].path = path
            manifest.databases[0].size = secret.size
            manifest.databases[0].sha256 = secret.sha256
            try await store.write(key, manifest.encoded(), condition: nil)
            let two = RemoteState(store: store, shard: whole, output: folder + "/two", databases: ["a.sqlite"],
                                  leaseTime: .seconds(30), logger: quiet)
            let error = await #expect(throws: StateError.self) { try await two.begin() }
            let what = path == "a.sqlite" ? "the object '\(object)', which is not under databases/"
                : "'\(path)', which is outside the output folder"
            #expect(error?.description == "file://\(folder)/store: \(key) names \(what): nothing was pulled; "
                + "remove \(key) to start the shard from the folder, or restore it")
            #expect(try rows(folder + "/two/a.sqlite") == ["mine"])
        }
    }

    @Test("a push's temporary files that a killed push left are swept once older than the lease; a live one stays")
    func temporariesSwept() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try StateLocation.open("file://\(folder)/store", environment: [:], logger: quiet)
        try FileManager.default.createDirectory(atPath: folder + "/store/databases/a.sqlite", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder + "/store/files/ab", withIntermediateDirectories: true)
        let old = [folder + "/store/databases/a.sqlite/.writing-1", folder + "/store/files/ab/.writing-2"]
        let live = folder + "/store/databases/a.sqlite/.writing-3"
        for path in old + [live] { #expect(FileManager.default.createFile(atPath: path, contents: Data("part".utf8))) }
        // The killed push's files were last written 31 seconds ago, past a lease of 30.
        for path in old {
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-31)], ofItemAtPath: path)
        }
        try database(folder + "/one/a.sqlite", ["x"])
        let one = RemoteState(store: store, shard: whole, output: folder + "/one", databases: ["a.sqlite"],
                              leaseTime: .seconds(30), logger: quiet)
        _ = try await one.begin()
        _ = try await one.push()
        await one.end()
        #expect(old.filter { FileManager.default.fileExists(atPath: $0) } == [])
        #expect(FileManager.default.fileExists(atPath: live))
    }

    @Test("a damaged manifest is named, with what is wrong with it in plain words and what to do")
    func damagedManifest() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try StateLocation.open("file://\(folder)/store", environment: [:], logger: quiet)
        let key = "shards/0-of-1/manifest.json"
        let advice = "; remove \(key) to start the shard from the folder, or restore it"
        let cases: [(String, String)] = [
            ("{\"shard\": ", "it is not JSON"),
            (#"{"shard": "0/1", "generation": 1, "pushed_at": "t", "databases": []}"#, "member 'format' is missing"),
            (#"{"format": 1, "shard": "0/1", "generation": "one", "pushed_at": "t", "databases": []}"#,
             "member 'generation' is not a whole number"),
            (#"{"format": 1, "shard": "0/1", "generation": 1, "pushed_at": "t", "databases": [{"path": "a.sqlite"}]}"#,
             "member 'databases[0].object' is missing"),
            (#"{"format": 1, "shard": "0/1", "generation": 1, "pushed_at": "t", "databases": {}}"#,
             "member 'databases' is not an array"),
            ("[1]", "it is not an object"),
            (#"{"format": 2, "shard": "0/1", "generation": 1, "pushed_at": "t", "databases": []}"#,
             "its format is 2, and this mirror reads format 1: a later mirror wrote it, use that one"),
        ]
        for (text, problem) in cases {
            try await store.write(key, Array(text.utf8), condition: nil)
            let state = RemoteState(store: store, shard: whole, output: folder + "/one", databases: ["a.sqlite"],
                                    leaseTime: .seconds(30), logger: quiet)
            let error = await #expect(throws: StateError.self) { try await state.begin() }
            #expect(error?.description == "file://\(folder)/store: \(key) is not a state manifest mirror can read: "
                + problem + (problem.hasPrefix("its format") ? "" : advice))
        }
    }

    @Test("databases are copied parents first, grandchildren after children, the rest and any cycle by name")
    func copyOrder() {
        #expect(RemoteState.copyOrder(["c.sqlite", "b.sqlite", "a.sqlite", "z.sqlite"],
                                      parents: ["a.sqlite": ["b.sqlite"], "b.sqlite": ["z.sqlite"]])
                == ["c.sqlite", "z.sqlite", "b.sqlite", "a.sqlite"])
        #expect(RemoteState.copyOrder(["b.sqlite", "a.sqlite", "c.sqlite"],
                                      parents: ["a.sqlite": ["b.sqlite", "a.sqlite"], "b.sqlite": ["a.sqlite"], "c.sqlite": ["a.sqlite"]])
                == ["a.sqlite", "b.sqlite", "c.sqlite"])
    }

    @Test("a push cut off before its manifest leaves the previous state whole: an empty folder pulls the last whole push")
    func cutPush() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = CutStore(inner: try StateLocation.open("file://\(folder)/store", environment: [:], logger: quiet))
        try database(folder + "/one/a.sqlite", ["x"])
        try database(folder + "/one/b.sqlite", ["y"])
        let one = RemoteState(store: store, shard: whole, output: folder + "/one", databases: ["a.sqlite", "b.sqlite"],
                              leaseTime: .seconds(30), logger: quiet)
        _ = try await one.begin()
        #expect(try await one.push().generation == 1)
        let before = try await store.list("")
        try database(folder + "/one/a.sqlite", ["x2"])
        try database(folder + "/one/b.sqlite", ["y2"])
        store.cut.withLock { $0 = true }
        await #expect(throws: StateError.self) { try await one.push() }
        // The new copies are there, unnamed; the manifest and the copies it names are as they were.
        let after = try await store.list("")
        #expect(Set(before).isSubset(of: Set(after)))
        #expect(after.count == before.count + 2)
        await one.end()

        let two = RemoteState(store: store, shard: whole, output: folder + "/two", databases: ["a.sqlite", "b.sqlite"],
                              leaseTime: .seconds(30), logger: quiet)
        let pulled = try await two.begin()
        #expect(pulled.databases == 2 && pulled.generation == 1)
        #expect(try rows(folder + "/two/a.sqlite") == ["x"])
        #expect(try rows(folder + "/two/b.sqlite") == ["y"])
        await two.end()
    }

    @Test("a lease: one holder at a time, taken over once lapsed, the lapsed holder's renewal refused")
    func lease() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await leaseContract(try StateLocation.open("file://" + folder, environment: [:], logger: quiet))
    }

    @Test("a kept lease is held however long its worker lives; a killed worker's lapses a lease time after its last renewal")
    func leaseKept() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await leaseKeepContract(try StateLocation.open("file://" + folder, environment: [:], logger: quiet))
    }

    @Test("a worker whose lease was taken over as it released it leaves the new holder's lease as it is")
    func leaseReleaseRace() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await leaseReleaseContract(try StateLocation.open("file://" + folder, environment: [:], logger: quiet))
    }

    @Test("push, pull into an empty folder, nothing written unchanged, a concurrent manifest refuses the push")
    func pushPull() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await pushPullContract(try StateLocation.open("file://" + folder, environment: [:], logger: quiet))
    }

    @Test("a consistent copy: the same content copies to the same bytes, other content to others")
    func copyIsStable() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try database(folder + "/a.sqlite", (0..<1000).map(String.init))
        try DatabaseCopy.write(from: folder + "/a.sqlite", to: folder + "/1")
        try DatabaseCopy.write(from: folder + "/a.sqlite", to: folder + "/2")
        #expect(try S3Client.Downloaded.read(folder + "/1") == S3Client.Downloaded.read(folder + "/2"))
        try database(folder + "/a.sqlite", ["more"])
        try DatabaseCopy.write(from: folder + "/a.sqlite", to: folder + "/3")
        #expect(try S3Client.Downloaded.read(folder + "/1") != S3Client.Downloaded.read(folder + "/3"))
        #expect(try rows(folder + "/3").count == 1001)
    }

    @Test("a location that is neither s3:// nor an absolute file:// is refused")
    func locations() throws {
        #expect(throws: StateError.self) { try StateLocation.open("file://relative", environment: [:], logger: quiet) }
        #expect(throws: StateError.self) { try StateLocation.open("/srv/state", environment: [:], logger: quiet) }
        #expect(throws: StateError.self) { try StateLocation.open("s3://", environment: [:], logger: quiet) }
    }
}

/// The same contracts against S3: moto in server mode, signatures checked, conditional writes enforced.
@Suite("remote state in S3 against a real server",
       .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"), .timeLimit(.minutes(6)))
struct RemoteStateS3Tests {
    private func withStore(_ bucket: String, _ body: (any ObjectStore) async throws -> Void) async throws {
        try await AuthServer.withShared("s3_server.py") { server in
            let environment = ["AWS_ACCESS_KEY_ID": server.value("access_key")!,
                               "AWS_SECRET_ACCESS_KEY": server.value("secret_key")!,
                               "AWS_ENDPOINT_URL_S3": server.base, "AWS_REGION": "us-east-1"]
            let client = S3Client(try S3Configuration(url: "s3://\(bucket)", environment: environment), logger: quiet)
            _ = try await client.exchange("PUT", key: nil)
            try await body(try StateLocation.open("s3://\(bucket)/state", environment: environment, logger: quiet))
        }
    }

    @Test("a lease: one holder at a time, taken over once lapsed, the lapsed holder's renewal refused")
    func lease() async throws {
        try await withStore("lease") { try await leaseContract($0) }
    }

    @Test("a kept lease is held however long its worker lives; a killed worker's lapses a lease time after its last renewal")
    func leaseKept() async throws {
        try await withStore("lease-kept") { try await leaseKeepContract($0) }
    }

    @Test("a worker whose lease was taken over as it released it leaves the new holder's lease as it is")
    func leaseReleaseRace() async throws {
        try await withStore("lease-release") { try await leaseReleaseContract($0) }
    }

    @Test("push, pull into an empty folder, nothing written unchanged, a concurrent manifest refuses the push; big copies stream")
    func pushPull() async throws {
        try await withStore("push-pull") { store in
            try await pushPullContract(store)
            // An object larger than a part streams to disk whole, its digest checked.
            let folder = try temporaryFolder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let bytes = (0..<(20 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
            #expect(FileManager.default.createFile(atPath: folder + "/big", contents: Data(bytes)))
            try await store.upload("big", fileAt: folder + "/big")
            let got = try #require(try await store.download("big", toFileAt: folder + "/back"))
            #expect(got == (try S3Client.Downloaded.read(folder + "/big")))
            #expect(FileManager.default.contents(atPath: folder + "/back") == Data(bytes))
            #expect(try await store.download("absent", toFileAt: folder + "/none") == nil)
            #expect(!FileManager.default.fileExists(atPath: folder + "/none"))
        }
    }
}
