import Foundation
package import MirrorModel

/// A token that was fetched (or signed), and until when it is good.
package struct Token: Sendable {
    package let value: String
    /// When it is fetched anew, on the run's clock: `margin` before it ends, or halfway
    /// through a life shorter than twice the margin; nil: when the API refuses it.
    package let renewAt: RunClock.Instant?
    /// When its life ends, counted from the moment it was asked for (the server cannot have
    /// started it earlier); nil: it lives until refused.
    package let endsAt: RunClock.Instant?
    /// Its place in the keeper's sequence of tokens.
    package let generation: Int

    /// The longest life a token is taken to have, 366 days: an answer that says more (1e30,
    /// infinity) is read as this, so such a token is fetched anew once a year.
    package static let longestLifetime: Double = 366 * 86_400

    /// A token fetched `now` that lives `lifetime` seconds (nil: until refused), between 0
    /// and `longestLifetime`.
    package init(value: String, lifetime: Double?, margin: Double, now: RunClock.Instant, generation: Int) {
        self.value = value
        self.generation = generation
        let lifetime = lifetime.map { $0.isNaN ? 0 : min(max(0, $0), Self.longestLifetime) }
        renewAt = lifetime.map { now + .seconds(max($0 - margin, $0 / 2)) }
        endsAt = lifetime.map { now + .seconds($0) }
    }
}

/// Keeps the token of one auth definition for every request of every job that uses it:
/// fetched when first needed, one fetch in flight at a time whoever asks, fetched anew
/// `margin` before it ends and once after the API refuses it (`rejected`). A rotated
/// refresh token is written to the definition's token store before anything uses the
/// access token that came with it, and a fetch sent is seen through even when no one
/// waits for it any more (`settle`).
package actor TokenKeeper {
    private let source: TokenSource
    private var current: Token?
    private var generation = 0
    /// The fetch in flight, and who waits for it.
    private var fetching = false
    private var inFlight: Task<Void, Never>?
    private var waiters: [Int: CheckedContinuation<Token, any Error>] = [:]
    private var nextWaiter = 0
    /// Waiters whose task was cancelled before they were listed.
    private var abandoned: Set<Int> = []

    package init(source: TokenSource) {
        self.source = source
    }

    /// The current token, fetched first if there is none or it ends within the margin.
    /// A cancelled caller stops waiting; the fetch goes on for the others.
    package func token(client: HTTPClient, timeout: Double) async throws -> Token {
        if let current, isFresh(current, now: client.clock.now) { return current }
        let id = nextWaiter
        nextWaiter += 1
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Token, any Error>) in
                if abandoned.remove(id) != nil {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                waiters[id] = continuation
                if !fetching {
                    fetching = true
                    let source = source, next = generation + 1
                    inFlight = Task { [weak self] in
                        let result: Result<Token, any Error>
                        do {
                            result = .success(try await source.fetch(client: client, timeout: timeout, generation: next))
                        } catch {
                            result = .failure(error)
                        }
                        await self?.finish(result)
                    }
                }
            }
        } onCancel: {
            Task { await self.abandon(id) }
        }
    }

    /// The API refused `generation`'s token: the next request fetches a new one, unless
    /// another request has already caused that.
    package func rejected(generation: Int) {
        if current?.generation == generation { current = nil }
    }

    /// Whether `token` had been replaced, or was being replaced, or had ended by `now`. A 401
    /// to it then says no more than that: a server that rotates refresh tokens revokes the
    /// access token of the one it rotates from as it answers (django-oauth-toolkit does), so
    /// a request sent with a token just before another request's refresh is refused.
    package func outlived(_ token: Token, now: RunClock.Instant) -> Bool {
        if fetching || generation > token.generation { return true }
        return token.endsAt.map { now >= $0 } ?? false
    }

    /// Waits for the fetch in flight, if any, to end. A walk that ended while a request past
    /// its last page waited for a token leaves that fetch behind, sent: the run waits for
    /// its answer, so that a refresh token the server rotated in it is stored.
    package func settle() async {
        await inFlight?.value
    }

    private func finish(_ result: Result<Token, any Error>) {
        fetching = false
        inFlight = nil
        if case let .success(token) = result {
            current = token
            generation = token.generation
        }
        let waiting = waiters
        waiters = [:]
        for continuation in waiting.values { continuation.resume(with: result) }
    }

    private func abandon(_ id: Int) {
        if let continuation = waiters.removeValue(forKey: id) {
            continuation.resume(throwing: CancellationError())
        } else if id < nextWaiter {
            abandoned.insert(id)
        }
    }

    private func isFresh(_ token: Token, now: RunClock.Instant) -> Bool {
        guard let renewAt = token.renewAt else { return true }
        return now < renewAt
    }
}
