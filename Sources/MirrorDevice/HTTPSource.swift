import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MirrorFiles
import MirrorModel
import MirrorReplica
import Synchronization

/// A published prefix or a snapshot at an `http(s)://` base URL, fetched with `URLSession`:
/// the manifest conditionally (`If-None-Match`), objects streamed to disk as they arrive
/// and resumed with `Range` where a piece of them is there already.
struct HTTPSource: SyncSource {
    let base: URL
    /// The sync's own session, let go when it is done.
    let session = TransferDelegate.session()

    var shown: String { ReplicaError.shown(base) }

    func manifest(unless etag: String?) async throws(ReplicaError) -> (bytes: [UInt8], etag: String)? {
        var request = URLRequest(url: objectURL("manifest.json", under: base))
        if let etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
        request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
        let transfer = try Transfer(sink: .memory(limit: 64 << 20, name: "the manifest"))
        let answer = try await transfer.run(request, in: session)
        if answer.status == 304 { return nil }
        guard answer.status == 200 else {
            throw .source("GET \(ReplicaError.shown(request.url!)): HTTP \(answer.status)")
        }
        return (transfer.body, answer.etag ?? "")
    }

    func fetch(_ remote: String, into file: Int32, holding offset: Int,
               received: @escaping @Sendable (Int) -> Void) async throws(ReplicaError) -> Fetched {
        var request = URLRequest(url: objectURL(remote, under: base))
        if offset > 0 { request.setValue("bytes=\(offset)-", forHTTPHeaderField: "Range") }
        let transfer = try Transfer(sink: .file(file, offset: offset, name: remote), received: received)
        let answer = try await transfer.run(request, in: session)
        guard answer.status == 200 || answer.status == 206 else {
            throw .source("GET \(ReplicaError.shown(request.url!)): HTTP \(answer.status)")
        }
        return transfer.fetched
    }

    func get(_ url: URL, token: String?, limit: Int) async throws(ReplicaError) -> (status: Int, body: [UInt8]) {
        var request = URLRequest(url: url)
        if let token { request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization") }
        request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
        let transfer = try Transfer(sink: .memory(limit: limit, name: "the answer of GET \(ReplicaError.shown(url))"),
                                    wholeAnyStatus: true)
        let answer = try await transfer.run(request, in: session)
        return (answer.status, transfer.body)
    }

    func close() async {
        session.finishTasksAndInvalidate()
    }
}

/// One request's transfer: its body kept in memory or written to a file, hashed on the way.
/// `URLSession` tells it of the answer through `TransferDelegate`.
final class Transfer: Sendable {
    enum Sink: Sendable {
        /// Kept in memory, up to `limit` bytes; `name` says what it is.
        case memory(limit: Int, name: String)
        /// Written to `file`, which holds `offset` bytes already, and hashed.
        case file(Int32, offset: Int, name: String)
    }

    struct Answer: Sendable {
        let status: Int
        let etag: String?
    }

    private struct State {
        var sink: Sink
        var hash = SHA256()
        var body: [UInt8] = []
        var status = 0
        var etag: String?
        /// Where the bytes written start in the object.
        var startedAt = 0
        var failure: ReplicaError?
        var continuation: CheckedContinuation<Answer, any Error>?
    }

    private let state: Mutex<State>
    private let received: (@Sendable (Int) -> Void)?
    /// Whether the body of an answer of any status is taken (an error's JSON), not only of a 2xx.
    private let wholeAnyStatus: Bool

    /// A transfer into `sink`; the bytes a file holds already are hashed first.
    init(sink: Sink, received: (@Sendable (Int) -> Void)? = nil, wholeAnyStatus: Bool = false) throws(ReplicaError) {
        self.wholeAnyStatus = wholeAnyStatus
        var offset = 0
        if case let .file(_, at, _) = sink { offset = at }
        state = Mutex(State(sink: sink, startedAt: offset))
        self.received = received
        guard case let .file(file, offset, name) = sink, offset > 0 else { return }
        let failure: FileError? = state.withLock { state in
            do throws(FileError) {
                state.hash = try hashed(file, upTo: offset)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw .folder("cannot read what was fetched of \(name): \(SystemError.reason(failure))") }
    }

    var body: [UInt8] { state.withLock { $0.body } }

    /// Where the bytes written start, and the SHA-256 of the whole file.
    var fetched: Fetched {
        state.withLock { Fetched(startedAt: $0.startedAt, sha256: Hex.string($0.hash.finalize())) }
    }

    /// Sends `request` and waits for its answer to have been received whole.
    func run(_ request: URLRequest, in session: URLSession) async throws(ReplicaError) -> Answer {
        let task = session.dataTask(with: request)
        TransferDelegate.of(session)?.add(self, for: task)
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Answer, any Error>) in
                    state.withLock { $0.continuation = continuation }
                    task.resume()
                }
            } onCancel: {
                task.cancel()
            }
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw Task.isCancelled ? .cancelled : .source("GET \(ReplicaError.shown(request.url!)): \(error.localizedDescription)")
        }
    }

    /// The answer's head: whether to take its body.
    func began(_ response: URLResponse) -> Bool {
        guard let response = response as? HTTPURLResponse else { return false }
        let headers = Dictionary(response.allHeaderFields.compactMap { key, value in
            (key as? String).map { ($0.lowercased(), "\(value)") }
        }, uniquingKeysWith: { first, _ in first })
        return state.withLock { state in
            state.status = response.statusCode
            state.etag = headers["etag"]
            guard (200..<300).contains(response.statusCode) || wholeAnyStatus else { return false }
            guard case let .file(file, offset, name) = state.sink, offset > 0 else { return true }
            // A resumed object: a 206 from where the file ends, or the whole object again.
            if response.statusCode == 206 {
                let range = headers["content-range"] ?? ""
                guard range.hasPrefix("bytes \(offset)-") else {
                    state.failure = .source("\(name): the source answered a range (\(range)) that does not start at byte \(offset)")
                    return false
                }
                return true
            }
            do throws(FileError) {
                try FileSystem.rewind(file)
                try FileSystem.truncate(file, to: 0)
            } catch {
                state.failure = .folder("cannot start \(name) again: \(SystemError.reason(error))")
                return false
            }
            state.sink = .file(file, offset: 0, name: name)
            state.hash = SHA256()
            state.startedAt = 0
            return true
        }
    }

    /// A piece of the body.
    func got(_ data: Data) {
        let count = state.withLock { state -> Int in
            guard state.failure == nil else { return 0 }
            switch state.sink {
            case let .memory(limit, name):
                guard state.body.count + data.count <= limit else {
                    state.failure = .source("\(name) is larger than \(limit >> 20) MiB")
                    return 0
                }
                state.body.append(contentsOf: data)
            case let .file(file, _, name):
                let failure: ReplicaError? = data.withUnsafeBytes { bytes in
                    do throws(ReplicaError) {
                        try keep(bytes, of: name, in: file, hashing: &state.hash)
                        return nil
                    } catch {
                        return error
                    }
                }
                if let failure {
                    state.failure = failure
                    return 0
                }
            }
            return data.count
        }
        if count > 0 { received?(count) }
    }

    /// The end of the transfer, with the error that ended it, if any.
    func ended(_ error: (any Error)?) {
        let (continuation, result): (CheckedContinuation<Answer, any Error>?, Result<Answer, any Error>) = state.withLock { state in
            defer { state.continuation = nil }
            if let failure = state.failure { return (state.continuation, .failure(failure)) }
            let answer = Answer(status: state.status, etag: state.etag)
            // A status the transfer refused to take the body of ends it as cancelled: its status says why.
            if let error, state.status == 0 || (200..<300).contains(state.status) { return (state.continuation, .failure(error)) }
            return (state.continuation, .success(answer))
        }
        continuation?.resume(with: result)
    }
}

/// The delegate of a sync's `URLSession`: hands each task's events to its `Transfer`.
final class TransferDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let transfers = Mutex<[Int: Transfer]>([:])

    static func of(_ session: URLSession) -> TransferDelegate? {
        session.delegate as? TransferDelegate
    }

    /// A session whose transfers this delegate follows.
    static func session() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.timeoutIntervalForRequest = 60
        return URLSession(configuration: configuration, delegate: TransferDelegate(), delegateQueue: PacedQueue())
    }

    func add(_ transfer: Transfer, for task: URLSessionTask) {
        transfers.withLock { $0[task.taskIdentifier] = transfer }
    }

    private func transfer(_ task: URLSessionTask) -> Transfer? {
        transfers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        completionHandler(transfer(dataTask)?.began(response) == true ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        transfer(dataTask)?.got(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let transfer = transfers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        transfer?.ended(error)
    }
}

/// The serial queue a sync's `URLSession` calls its delegate on, holding at most `room`
/// operations that wait: whoever adds one more waits for one to end.
///
/// swift-corelibs-foundation's `URLSession` hands each piece of a body (at most 16 KiB,
/// libcurl's write size) to the delegate queue as it is read and reads on, with no regard
/// for whether the delegate keeps up. When writing and hashing fall behind the network, the
/// pieces waiting pile up in memory. Adding an operation here blocks the session's own
/// thread instead, so libcurl stops reading the socket and TCP slows the server down: at
/// most `room` pieces (4 MiB) wait. An operation added from the queue itself never waits.
final class PacedQueue: OperationQueue, @unchecked Sendable {
    /// How many operations may wait.
    static let room = 256

    private let free: DispatchSemaphore

    init(room: Int = PacedQueue.room) {
        free = DispatchSemaphore(value: room)
        super.init()
        maxConcurrentOperationCount = 1
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        let waits = OperationQueue.current !== self
        if waits { free.wait() }
        let free = self.free
        super.addOperation {
            block()
            if waits { free.signal() }
        }
    }
}
