import Confinement
import Dispatch
import DownloadCore
import Logging
import Persistence

/// Prunes what `FETCHD_RETENTION` no longer keeps — terminal jobs, settled webhook deliveries —
/// idempotency keys after at least 24 hours and the store's own spent bookkeeping, so the
/// database stays bounded under steady churn; removes partial files no job keeps, and does a
/// completed upload's `deleteSource` that its node left undone. Runs at start and then every so
/// often.
final class Housekeeper: QueueConfined, @unchecked Sendable {  // `timer` only on `queue` (assertOnQueue)
    let queue = DispatchQueue(label: "fetchd.housekeeping", target: Upkeep.queue)
    let store: any JobStore
    let retention: Int64
    let clock: Clock
    let logger: Logger
    /// Failed jobs' partial files go with their jobs.
    let partials: PartialFiles
    /// Where uploads' sources are; nil where the service takes no uploads.
    let sources: UploadSources?
    /// Runs first in each pass: the uploads of ended jobs are aborted (`UploadSweeper`), which
    /// pruning waits for.
    let beforePruning: @Sendable () -> Void
    private lazy var timer = DueTimer(queue: queue, leeway: .seconds(1)) { [unowned self] in self.run() }

    /// The event log (`GET /events`) keeps at least the last hour and at least this many events.
    static let eventLogAge: Int64 = 3_600_000
    static let eventLogMinimum = 10_000

    /// Idempotency keys make retries safe for at least this long, whatever the retention.
    static let minimumKeyLifetime: Int64 = 24 * 3_600_000

    init(store: any JobStore, retention: Duration, partials: PartialFiles, sources: UploadSources? = nil, clock: Clock,
         logger: Logger, beforePruning: @escaping @Sendable () -> Void = {}) {
        self.store = store
        self.beforePruning = beforePruning
        self.partials = partials
        self.sources = sources
        self.retention = retention.wholeMilliseconds
        self.clock = clock
        self.logger = logger
    }

    /// A quarter of the retention, between a second and an hour.
    var interval: Int64 { min(max(retention / 4, 1000), 3_600_000) }

    /// The first pass, right after Recovery, which has just looked through the partial files.
    func start() {
        queue.async { self.run(scanningPartials: false) }
    }

    func stop() {
        queue.sync { timer.cancel() }
    }

    /// One pass; the partial files are looked through when `scanningPartials` or when jobs were pruned.
    func run(scanningPartials: Bool = true) {
        assertOnQueue()
        let now = clock.now()
        beforePruning()
        do {
            let pruned = try store.prune(finishedBefore: now - retention, settledBefore: now - retention,
                                         keysBefore: now - max(retention, Self.minimumKeyLifetime))
            if scanningPartials || pruned.downloads > 0 {
                try PartialFiles.removeUnkept(partials, store: store) { job in finishesDeleteSource(of: job, now: now) }
            }
            let events = try store.pruneEventLog(before: now - Self.eventLogAge, keepingLast: Self.eventLogMinimum)
            if !pruned.isEmpty || events > 0 {
                logger.info("pruned", metadata: [
                    "downloads": "\(pruned.downloads)", "webhook.deliveries": "\(pruned.deliveries)",
                    "idempotency.keys": "\(pruned.idempotencyKeys)", "sessions": "\(pruned.sessions)", "events": "\(events)",
                ])
            }
        } catch {
            logger.error("housekeeping failed", metadata: ["error": "\(error)"])
        }
        timer.arm(at: now + interval, now: now)
    }

    /// A completed upload's partial file marks its `deleteSource` as left to do (see Recovery):
    /// its node stopped between the commit and the removal, and may never start again. Done here
    /// once the node would have been taken for dead, had it stopped — before, it may be about to
    /// do it itself. False keeps the mark for a later pass.
    private func finishesDeleteSource(of job: Download, now: Int64) -> Bool {
        guard job.state == .completed, job.upload?.deleteSource == true else { return true }
        guard now - (job.finishedAt ?? now) >= NodeLease.hungAfter else { return false }
        sources?.removeSent(by: job, logger: logger)
        return true
    }
}
