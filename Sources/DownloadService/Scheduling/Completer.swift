import Confinement
import Dispatch
import Logging
import Persistence

/// Commits what attempts produce: progress, settlements and stops are gathered while the queue is
/// busy and written in one transaction at its next turn, after one fsync per directory files were
/// placed in; with a scheduling pass in the same transaction when slots were freed or jobs may
/// have come back to the queue. A batch the store does not take (the database cannot be written)
/// is written again, before anything newer, until it is saved: nothing an attempt produced is lost.
final class Completer: QueueConfined, @unchecked Sendable {  // all mutable state only on `queue` (assertOnQueue)
    let queue: DispatchQueue
    private let store: any JobStore
    private let logger: Logger
    /// Runs a scheduling pass whose claims `claim` makes in the turn's transaction; false when it
    /// failed (and logged why). Set once, as the scheduler is put together.
    var runPass: (_ claim: (ClaimPass) throws -> ClaimResult) -> Bool = { _ in false }
    /// Called after a turn that saved the end of an attempt while stopping (shutdown waits for the last).
    var savedWhileStopping: () -> Void = {}
    /// Makes the names of placed files durable (`PlacedDirectory.sync`); a test stands in a
    /// file system whose syncs fail.
    var syncDirectories: ([PlacedDirectory]) -> String? = { PlacedDirectory.sync($0) }
    /// Writes waiting for the commit at the queue's next turn.
    private lazy var pending = NextTurnBatch<JobWrite>(queue: queue) { [unowned self] in self.commit($0) }
    /// Writes whose commit failed: committed again, before anything newer, until they are saved.
    private lazy var unsaved = UnsavedBatch<JobWrite>(queue: queue, delay: .milliseconds(Int(Self.storeRetryInterval))) {
        [unowned self] in self.commit([])
    }
    /// An attempt ended since the last turn: its job may be back in the queue.
    private var attemptsEnded = false
    /// A transfer's body is in and its slot free: the next turn claims a job for it.
    private var passWanted = false
    /// Shutting down: turns write, but claim nothing.
    private var stopping = false

    /// How soon a failed commit is tried again.
    static let storeRetryInterval: Int64 = 1000

    init(queue: DispatchQueue, store: any JobStore, logger: Logger) {
        self.queue = queue
        self.store = store
        self.logger = logger
    }

    /// Adds a write to the next turn's transaction.
    func add(_ write: JobWrite) {
        assertOnQueue()
        pending.add(write)
    }

    /// An attempt ended in a way that may put its job back in the queue: the next turn runs a pass.
    func attemptEnded() {
        assertOnQueue()
        attemptsEnded = true
    }

    /// A slot was freed before its attempt settled: the next turn runs a pass for it, with
    /// whatever writes wait then (not with that attempt's own settlement, which waits for its fsync).
    func wantPass() {
        assertOnQueue()
        passWanted = true
        pending.wake()
    }

    /// One scheduling pass now, in one transaction with the writes waiting for the next turn.
    func commitWithPass() {
        assertOnQueue()
        commit(pending.take(), claiming: true)
    }

    /// From now on turns write but run no pass.
    func stop() {
        assertOnQueue()
        stopping = true
    }

    private func commit(_ writes: [JobWrite], claiming: Bool = false) {
        let batch = unsaved.take(adding: writes)
        if let problem = syncDirectories(batch.compactMap(\.placedIn)) {
            // Like a write the store refused: the jobs stay `running`, their partial files stay
            // (a restart finds such a file placed), and the whole batch is tried again later.
            logger.error("finished files' names not durable; trying again", metadata: ["jobs": "\(batch.count)", "error": "\(problem)"])
            unsaved.keep(batch)
            return
        }
        let claiming = (claiming || passWanted || attemptsEnded) && !stopping
        if claiming { (passWanted, attemptsEnded) = (false, false) }
        guard !batch.isEmpty || claiming else { return }
        let changes = batch.flatMap(\.changes)
        do {
            if !claiming {
                committed(batch, try store.apply(changes))
            } else if !runPass({ pass in
                guard !changes.isEmpty else { return try store.claim(pass) }
                let turn = try store.applyAndClaim(changes, pass)
                // Announced before the pass starts what it claimed: a job settled and claimed again
                // in this turn is seen back in the queue before it is seen running.
                committed(batch, turn.applied)
                return turn.claim
            }) {
                throw TurnFailed()
            }
        } catch {
            guard !batch.isEmpty else { return }
            // Nothing of the batch is saved; the jobs stay `running` in the database, so nothing
            // else claims them, and their settlement is tried again until the store takes it.
            logger.error("job states not saved; trying again", metadata: ["jobs": "\(batch.count)", "error": "\(error)"])
            unsaved.keep(batch)
            return
        }
        if stopping, attemptsEnded {
            attemptsEnded = false
            savedWhileStopping()
        }
    }

    /// Runs what follows each write's commit, with its changes' results.
    private func committed(_ batch: [JobWrite], _ results: [Bool]) {
        var offset = 0
        for write in batch {
            write.committed(Array(results[offset..<offset + write.changes.count]))
            offset += write.changes.count
        }
    }

    /// A turn's transaction failed in its scheduling pass (which logged why).
    private struct TurnFailed: Error {}
}
