import Dispatch
import HTTPServer
import Persistence
import Synchronization

/// Group commit for new jobs. Concurrent `POST /downloads` requests hand their job here and wait;
/// one writer commits everything that has gathered in a single transaction and then answers each
/// request with its own outcome. While the writer commits one batch the next one gathers, so
/// batches grow with the load and no request ever waits for a timer. No 201 is sent before its
/// job is committed, and the HTTP event loops never block on SQLite.
final class InsertBatcher: Sendable {
    private struct Waiting: Sendable {
        var job: NewJob
        var continuation: CheckedContinuation<Result<InsertOutcome, any Error>, Never>
    }

    private struct Pending: Sendable {
        var waiting: [Waiting] = []
        /// Whether a drain is queued or running; only it takes from `waiting`.
        var draining = false
        /// Whether a request is letting the others of its turn join before it starts a drain.
        var gathering = false
    }

    private let store: any JobStore
    /// The most jobs in one transaction, so one batch cannot hold the write lock for long.
    private let maxBatch: Int
    private let queue = DispatchQueue(label: "fetchd.insert-batcher")
    private let pending = Mutex(Pending())

    init(store: any JobStore, maxBatch: Int = 256) {
        self.store = store
        self.maxBatch = maxBatch
    }

    /// Commits `job` with whatever else is waiting; returns once it is durable (or failed).
    ///
    /// A request that finds the writer idle does not wake it at once: the drain starts after the
    /// other requests its event loop runs in the same turn (those one `epoll_wait` returned) have
    /// added theirs, so that they commit together. Woken by the first, the writer would commit one
    /// or two jobs at a time, and every commit writes the same dozen pages.
    func insert(_ job: NewJob) async throws -> InsertOutcome {
        let result = await withCheckedContinuation { continuation in
            let leads = pending.withLock { pending in
                pending.waiting.append(Waiting(job: job, continuation: continuation))
                guard !pending.draining, !pending.gathering else { return false }
                pending.gathering = true
                return true
            }
            guard leads else { return }
            HTTPServer.afterLoopTurn {
                self.pending.withLock { pending in
                    pending.gathering = false
                    pending.draining = true
                }
                self.queue.async { self.drain() }
            }
        }
        return try result.get()
    }

    private func drain() {
        while true {
            let batch = pending.withLock { pending -> [Waiting] in
                let count = min(maxBatch, pending.waiting.count)
                if count == 0 { pending.draining = false }
                let batch = Array(pending.waiting.prefix(count))
                pending.waiting.removeFirst(count)
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                let outcomes = try store.insert(batch.map(\.job))
                for (waiting, outcome) in zip(batch, outcomes) { waiting.continuation.resume(returning: .success(outcome)) }
            } catch {
                for waiting in batch { waiting.continuation.resume(returning: .failure(error)) }
            }
        }
    }
}
