import Dispatch
import DownloadCore
import Logging
import Persistence

/// The scheduler, in three parts on one serial queue, along the lines River draws: the
/// `Dispatcher` decides what runs (timer, passes, the `LoadLedger`'s accounting, host holds), the
/// `AttemptRunner` runs attempts (start, ranges, progress, stop) and the `Completer` commits what
/// they produce (batches, writes the store did not take, directory syncs). The rest of the
/// service talks to this front, from any thread; it hops onto the queue.
final class Scheduler: Sendable {
    let queue = DispatchQueue(label: "fetchd.scheduler")
    let ledger: LoadLedger
    let dispatcher: Dispatcher
    let attempts: AttemptRunner
    let completer: Completer

    init(store: any JobStore, transfers: any TransferRunning, template: TransferTemplate, settlement: SettlementContext,
         policy: SchedulingPolicy, disk: DiskSpace, objectStorage: ObjectStorage? = nil, uploadSources: UploadSources? = nil,
         tusChunkSize: Int64 = 8 << 20, sweeper: UploadSweeper? = nil,
         hub: EventHub, clock: Clock, logger: Logger) {
        ledger = LoadLedger(queue: queue, capacity: policy.capacity)
        let completer = Completer(queue: queue, store: store, logger: logger)
        self.completer = completer
        let queue = queue
        let objects = objectStorage.map {
            ObjectAttempts(queue: queue, client: $0.client, partSize: $0.partSize, transfers: transfers, completer: completer,
                           partials: settlement.partials, logger: logger)
        }
        let uploads = uploadSources.map {
            UploadAttempts(sources: $0, template: template, transfers: transfers, queue: queue, completer: completer,
                           tusChunkSize: tusChunkSize, partials: settlement.partials, storage: objectStorage, clock: clock, logger: logger)
        }
        attempts = AttemptRunner(queue: queue, ledger: ledger, completer: completer, transfers: transfers, template: template,
                                 settlement: settlement, objects: objects, uploads: uploads,
                                 sweeper: sweeper ?? objectStorage?.sweeper, hub: hub, clock: clock, logger: logger)
        dispatcher = Dispatcher(queue: queue, store: store, policy: policy, ledger: ledger, attempts: attempts,
                                completer: completer, disk: disk, clock: clock, logger: logger)
        completer.runPass = { [unowned dispatcher] claim in dispatcher.pass(claim) }
        completer.savedWhileStopping = { [unowned attempts] in attempts.endShutdownIfDrained() }
    }

    // MARK: - Deciding

    /// Asks for a scheduling pass; many requests before it runs make one pass.
    func poke() { dispatcher.poke() }

    /// A job was stored that may run from `runAt` (see `Dispatcher.jobStored`).
    func jobStored(runAt: Int64) { dispatcher.jobStored(runAt: runAt) }

    /// One scheduling pass now; on the queue.
    func schedule() { dispatcher.schedule() }

    /// What runs now and the free disk space, for explaining waits; take one per API request.
    func loadSnapshot() -> Load { dispatcher.loadSnapshot() }

    /// Transfers running now.
    var runningTransfers: Int { ledger.snapshot.running }

    /// Why a queued job waits now, by the same rule the passes follow.
    func waitingFor(_ job: Download, load: Load, now: Int64) -> WaitingFor? {
        dispatcher.waitingFor(job, load: load, now: now)
    }

    // MARK: - Running

    /// The jobs whose transfers run now (their claims committed), for a node that checks them
    /// against the store (cancel or pause through another node, a lease lost).
    func startedJobIDs() -> [String] { queue.sync { attempts.startedJobIDs() } }

    /// Bytes on disk of a running job, fresher than its stored count. Read before the job's row
    /// (`Download.bytesShown(liveBytes:)` says why), as is `liveProgress()`.
    func liveBytes(of id: String) -> Int64? { attempts.live.withLock { $0[id]?.bytesReceived } }

    /// Every running transfer's progress now, by job id.
    func liveProgress() -> [String: LiveProgress] { attempts.live.withLock { $0 } }

    /// Stops a job's transfer if it runs; a cancelled job's partial data is removed either way.
    func stop(_ id: String, reason: StopReason) {
        queue.async { self.attempts.stop(id, reason: reason) }
    }

    /// A client changed a job (PATCH); `restart`: with a new request (see `AttemptRunner.changed`).
    func changed(_ job: Download, restart: Bool) {
        queue.async { self.attempts.changed(job, restart: restart) }
    }

    /// Stops every transfer, keeping partial data; the jobs go back to `queued` for the next start.
    func shutdown(timeout: Duration) async {
        await withCheckedContinuation { (drained: CheckedContinuation<Void, Never>) in
            queue.async {
                self.dispatcher.stop()
                self.completer.stop()
                self.attempts.shutdown(timeout: timeout, drained: drained)
            }
        }
    }
}
