import Confinement
import Dispatch
import DownloadCore
import Logging
import Persistence
import Synchronization

/// A node's part in a cluster sharing one PostgreSQL (only run with FETCHD_DATABASE_URL), twice
/// a second: renews its lease, and stops its own transfers (keeping their partial data) when it
/// could not renew for `NodeLease.standDownAfter` or finds it was taken for dead — before the
/// others may take its jobs over (`NodeLease.deadAfter`), so no job runs on two nodes; takes over
/// and requeues the running jobs of nodes found dead (after an outage of the database, not before
/// the others have had that long to renew theirs); stops transfers of jobs cancelled or
/// paused through another node; and polls for work other nodes made (new jobs, deliveries of a
/// dead node), as a fallback for any wake-up.
final class NodeHeartbeat: QueueConfined, @unchecked Sendable {  // `timer`, `lastRenewed`, `stoodDown` and `backSince` only on `queue` (assertOnQueue)
    let queue = DispatchQueue(label: "fetchd.heartbeat")
    private let store: any JobStore
    private let scheduler: Scheduler
    private let dispatcher: WebhookDispatcher
    private let recovery: Recovery
    private let clock: Clock
    private let logger: Logger
    private lazy var timer = DueTimer(queue: queue, leeway: .milliseconds(20)) { [unowned self] in self.beat() }
    private var lastRenewed: Int64
    private var stoodDown = false
    /// When the lease was renewed again after two heartbeats' time without (the database out of
    /// reach, or this node stalled), until `NodeLease.deadAfter` has passed since.
    private var backSince: Int64?

    init(store: any JobStore, scheduler: Scheduler, dispatcher: WebhookDispatcher, recovery: Recovery, clock: Clock, logger: Logger) {
        self.store = store
        self.scheduler = scheduler
        self.dispatcher = dispatcher
        self.recovery = recovery
        self.clock = clock
        self.logger = logger
        lastRenewed = clock.now()
    }

    func start() {
        queue.async { self.beat() }
        store.watchForWork { [scheduler] in scheduler.poke() }
    }

    func stop() {
        queue.sync { timer.cancel() }
    }

    private func beat() {
        assertOnQueue()
        let now = clock.now()
        defer { timer.arm(at: clock.now() + NodeLease.renewEvery, now: clock.now()) }
        do {
            let kept = try store.renewLease()
            if now - lastRenewed > NodeLease.renewEvery * 2 { backSince = backSince ?? now }
            lastRenewed = now
            if !kept {
                logger.warning("this node was taken for dead and its jobs were taken over; stopping its transfers")
                standDown()
            }
            stoodDown = false
        } catch {
            if now - lastRenewed >= NodeLease.standDownAfter, !stoodDown {
                logger.error("cannot renew this node's lease; stopping its transfers, keeping their partial data",
                             metadata: ["error": "\(error)"])
                standDown()
                stoodDown = true
            }
            return
        }
        do {
            if mayTakeOver(now: now) {
                let abandoned = try store.takeOverAbandonedJobs()
                if !abandoned.isEmpty {
                    logger.info("taking over the jobs of a node found dead", metadata: ["downloads": "\(abandoned.count)"])
                    try recovery.settle(abandoned, now: now)
                }
            }
            for (id, state) in try store.jobsNotRunningHere(scheduler.startedJobIDs()) {
                scheduler.stop(id, reason: state == .cancelled ? .cancel : state == .paused ? .pause : .shutdown)
            }
        } catch {
            logger.error("cluster upkeep failed", metadata: ["error": "\(error)"])
        }
        scheduler.poke()
        dispatcher.poke()
    }

    /// Back from an outage, every node's heartbeat is stale, the others' as this one's: none is
    /// taken for dead until it has had a lease's time to renew (or the first node back would take
    /// all the others' running jobs, with the completions they have not committed yet).
    private func mayTakeOver(now: Int64) -> Bool {
        assertOnQueue()
        if let backSince, now - backSince < NodeLease.deadAfter { return false }
        backSince = nil
        return true
    }

    /// Stops every transfer of this node; their settlements are refused if the jobs were taken over.
    private func standDown() {
        for id in scheduler.startedJobIDs() { scheduler.stop(id, reason: .shutdown) }
    }
}
