import Confinement
import Dispatch
import DownloadCore
import Logging
import Persistence
import Synchronization

/// Decides which queued jobs run: one timer for the next change of the queue (nothing polls while
/// idle), scheduling passes that ask the policy about each candidate with the load as it grows
/// during the pass, and claims committed by the completer in its turn's transaction. What it
/// chooses it hands to the attempt runner (see `EarlyStart` for when).
final class Dispatcher: QueueConfined, @unchecked Sendable {  // `earlyStart` and the timer only on `queue` (assertOnQueue)
    let queue: DispatchQueue
    private let store: any JobStore
    private let policy: SchedulingPolicy
    private let ledger: LoadLedger
    private let attempts: AttemptRunner
    private let completer: Completer
    private let disk: DiskSpace
    private let clock: Clock
    private let logger: Logger
    private var earlyStart = EarlyStart()
    private lazy var timer = DueTimer(queue: queue, leeway: .milliseconds(5)) { [unowned self] in self.schedule() }
    private let passPending = Atomic<Bool>(false)
    /// When the timer fires next (milliseconds since the epoch; `.max` when disarmed). Set on the
    /// queue; `jobStored` reads it from the event loops.
    private let plannedPass = Atomic<Int64>(.max)
    /// The earliest `runAt` of jobs stored since `considerNewJobs` last looked, and whether it is queued.
    private let earliestNewJob = Atomic<Int64>(.max)
    private let newJobsPending = Atomic<Bool>(false)

    /// While a job waits for disk space, how often space is looked at again (nothing signals it).
    static let diskRecheckInterval: Int64 = 2000
    /// How soon a failed scheduling pass is tried again: as soon as a refused commit is.
    static let storeRetryInterval = Completer.storeRetryInterval

    init(queue: DispatchQueue, store: any JobStore, policy: SchedulingPolicy, ledger: LoadLedger, attempts: AttemptRunner,
         completer: Completer, disk: DiskSpace, clock: Clock, logger: Logger) {
        self.queue = queue
        self.store = store
        self.policy = policy
        self.ledger = ledger
        self.attempts = attempts
        self.completer = completer
        self.disk = disk
        self.clock = clock
        self.logger = logger
    }

    private var timerDeadline: Int64 {
        get { plannedPass.load(ordering: .sequentiallyConsistent) }
        set { plannedPass.store(newValue, ordering: .sequentiallyConsistent) }
    }

    /// When the timer fires next, nil when no pass is planned: what a test checks a pass planned.
    var plannedPassAt: Int64? {
        let deadline = timerDeadline
        return deadline == .max ? nil : deadline
    }

    // MARK: - When a pass runs

    /// Asks for a scheduling pass; many requests before it runs make one pass. From any thread.
    func poke() {
        guard !passPending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { self.schedule() }
    }

    /// A job was stored that may run from `runAt`. Passes cost queries, so one runs only if the
    /// job may be due before the pass already planned: under a burst of far-future submissions
    /// the scheduler stays idle. From any thread.
    func jobStored(runAt: Int64) {
        earliestNewJob.min(runAt, ordering: .sequentiallyConsistent)
        // Not due before the pass already planned: no look now, and no wake-up of the queue per
        // POST. `arm` reads `earliestNewJob` after it moves the deadline, so a pass planned
        // meanwhile (from a read of the store before this job) cannot pass over it.
        guard runAt < timerDeadline else { return }
        lookAtNewJobs()
    }

    private func lookAtNewJobs() {
        guard !newJobsPending.exchange(true, ordering: .sequentiallyConsistent) else { return }
        queue.async { self.considerNewJobs() }
    }

    private func considerNewJobs() {
        // Cleared before the minimum is taken, so a job stored meanwhile queues another look.
        newJobsPending.store(false, ordering: .sequentiallyConsistent)
        let earliest = earliestNewJob.exchange(.max, ordering: .sequentiallyConsistent)
        if earliest < timerDeadline { schedule() }
    }

    /// One scheduling pass, in one transaction with the writes waiting for the queue's next turn.
    func schedule() {
        assertOnQueue()
        passPending.store(false, ordering: .releasing)
        completer.commitWithPass()
    }

    /// No more passes (shutting down).
    func stop() {
        assertOnQueue()
        timer.cancel()
        timerDeadline = .max
    }

    private func arm(at deadline: Int64?, now: Int64) {
        timer.arm(at: deadline, now: now)
        timerDeadline = deadline ?? .max
        if earliestNewJob.load(ordering: .sequentiallyConsistent) < timerDeadline { lookAtNewJobs() }
    }

    // MARK: - Why a job waits

    /// What runs now and the free disk space, for explaining waits; take one per API request.
    func loadSnapshot() -> Load {
        var snapshot = ledger.snapshot
        snapshot.freeDiskBytes = disk.freeBytes(now: clock.now(), maxAge: DiskSpace.readerMaxAge).map { $0 - snapshot.reservedDiskBytes }
        return snapshot
    }

    /// Why a queued job waits now, by the same rule the passes follow (its saved byte count
    /// stands in for the partial file's length).
    func waitingFor(_ job: Download, load: Load, now: Int64) -> WaitingFor? {
        guard job.state == .queued else { return nil }
        if job.awaitingURLSince != nil { return .url }
        switch policy.decide(job, now: now, load: load, partialBytes: job.bytesReceived) {
        case .wait(let reason): return reason
        case .start: return .slot  // startable: it waits for the next pass to give it a slot
        }
    }

    // MARK: - A pass

    /// A scheduling pass: the store promotes, reads candidates and claims in one transaction (that
    /// `claim` runs, alone or after a turn's writes), asking the policy about each candidate with
    /// the load as it grows during the pass. False when the store failed: nothing was claimed,
    /// and a pass is tried again later.
    func pass(_ claim: (ClaimPass) throws -> ClaimResult) -> Bool {
        assertOnQueue()
        let now = clock.now()
        do {
            try ledger.forgetPastHolds(now: now) { try store.hostBackoffs(after: now) }
        } catch {
            return failed(error, now: now)
        }
        let choices = PassChoices(now: now, freeDisk: disk.freeBytes(now: now), policy: policy, ledger: ledger,
                                  attempts: attempts, earlyStart: earlyStart)
        do {
            let result = try claim(choices.claimPass())
            earlyStart.passCommitted()
            let claimed = Set(result.claimed.map(\.id))
            for (attempt, partialBytes) in choices.reserved {
                // A job a client (or another node) changed meanwhile was not claimed.
                guard claimed.contains(attempt.download.id) else {
                    attempts.abandon(attempt.download.id)
                    continue
                }
                attempts.hub.publish(attempt.download.id, .state(attempt.download))
                if attempt.download.awaitingURLSince != nil {
                    attempts.expireURL(attempt, partialBytes: partialBytes, now: now)
                } else if attempts.awaitsStart(attempt.download.id) {  // not started with the pass
                    attempts.start(attempt.download, resumeFrom: partialBytes)
                }
            }
            let wakeUps = [
                result.nextQueueChange,
                policy.nextWindowOpening(after: now),
                choices.waitsForDisk ? now + Self.diskRecheckInterval : nil,
                ledger.nextHoldEnd,
            ]
            arm(at: wakeUps.compactMap { $0 }.min(), now: now)
            return true
        } catch {
            for (attempt, _) in choices.reserved { attempts.abandon(attempt.download.id) }
            earlyStart.passFailed()
            return failed(error, now: now)
        }
    }

    private func failed(_ error: any Error, now: Int64) -> Bool {
        logger.error("scheduling failed", metadata: ["error": "\(error)"])
        arm(at: now + Self.storeRetryInterval, now: now)
        return false
    }
}
