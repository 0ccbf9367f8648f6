import Dispatch
import DownloadCore
import HTTPServer
import Persistence
import Synchronization

/// Group commit for new jobs. Concurrent `POST /downloads` requests hand their job here and wait;
/// one writer commits everything that has gathered in a single transaction and then answers each
/// request with its own outcome. While the writer commits one batch the next one gathers, so
/// batches grow with the load and no request waits for a timer (but for a regather, on
/// PostgreSQL: at most `regather` after a commit, see `armRegather`). No 201 is sent before its
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
        /// While the writer regathers: the number of waiting jobs that ends its wait (0: none).
        var regatherUntil = 0
    }

    private let store: any JobStore
    /// The most jobs in one transaction, so one batch cannot hold the write lock for long.
    private let maxBatch: Int
    private let queue = DispatchQueue(label: "fetchd.insert-batcher")
    private let pending = Mutex(Pending())
    /// How long the writer waits after a commit for the requests it answered to come back (nil:
    /// not at all); `regathered` ends the wait early.
    private let regather: Duration?
    private let regathered = DispatchSemaphore(value: 0)

    /// `regather`: for PostgreSQL, whose fixed cost per transaction (statements, round trips, the
    /// kept counts) is most of a small batch's. SQLite's commit (a write to the log, no fsync) is
    /// cheap enough that a 2 ms regather measured level there, for POSTs alone and beside the
    /// small files' transfers (docs/benchmarks.md).
    init(store: any JobStore, maxBatch: Int = 256, regather: Duration? = nil) {
        self.store = store
        self.maxBatch = maxBatch
        self.regather = regather
    }

    /// Commits `job` with whatever else is waiting; returns once it is durable (or failed).
    ///
    /// A request that finds the writer idle does not wake it at once: the drain starts after the
    /// other requests its event loop runs in the same turn (those one `epoll_wait` returned) have
    /// added theirs, so that they commit together. Woken by the first, the writer would commit one
    /// or two jobs at a time, and every commit writes the same dozen pages.
    func insert(_ job: NewJob) async throws -> InsertOutcome {
        let result = await withCheckedContinuation { continuation in
            let (leads, endsRegather) = pending.withLock { pending in
                pending.waiting.append(Waiting(job: job, continuation: continuation))
                if pending.regatherUntil > 0, pending.waiting.count >= pending.regatherUntil {
                    pending.regatherUntil = 0
                    return (false, true)
                }
                guard !pending.draining, !pending.gathering else { return (false, false) }
                pending.gathering = true
                return (true, false)
            }
            if endsRegather { regathered.signal() }
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
            let committed = Result { try store.insert(batch.map(\.job)) }
            // Armed before the answers go out, so that no returning request can slip past it.
            let regathers = regather != nil && batch.count > 1 && armRegather(answering: batch.count)
            switch committed {
            case .success(let outcomes):
                for (waiting, outcome) in zip(batch, outcomes) { waiting.continuation.resume(returning: .success(outcome)) }
            case .failure(let error):
                for waiting in batch { waiting.continuation.resume(returning: .failure(error)) }
            }
            if regathers, let regather { awaitRegather(upTo: regather) }
        }
    }

    /// Regathering: after a commit the writer waits until the requests it answered could have sent
    /// their next jobs (as many more jobs wait as it answered), or `regather` has passed. Under
    /// load the clients of one node otherwise split into two groups whose batches alternate, each
    /// half their number; merged, each batch carries the transaction's fixed cost for twice the
    /// jobs. Only up to `regatherBatch`: batches that large amortise the fixed cost already, and a
    /// writer waiting for them would leave the database idle (one node with many clients).
    private func armRegather(answering answered: Int) -> Bool {
        pending.withLock { pending in
            let until = pending.waiting.count + answered
            guard until <= Self.regatherBatch else { return false }
            pending.regatherUntil = until
            return true
        }
    }

    static let regatherBatch = 32

    private func awaitRegather(upTo limit: Duration) {
        _ = regathered.wait(timeout: .now() + limit.inSeconds)
        pending.withLock { $0.regatherUntil = 0 }
        // A signal sent after the timeout would cut the next wait short: take it back.
        while regathered.wait(timeout: .now()) == .success {}
    }
}
