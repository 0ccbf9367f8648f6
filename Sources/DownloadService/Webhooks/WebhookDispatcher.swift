import Confinement
import Dispatch
import DownloadCore
import Logging
import Persistence
import Synchronization
import Transfer

/// Delivers the webhook outbox: sends each pending delivery when due and records the outcome as
/// `DeliveryPolicy` judges it, across restarts.
final class WebhookDispatcher: QueueConfined, @unchecked Sendable {  // all mutable state below only on `queue` (assertOnQueue)
    let queue = DispatchQueue(label: "fetchd.webhooks")
    private let store: any JobStore
    private let sender: any WebhookSending
    private let policy: DeliveryPolicy
    private let clock: Clock
    private let logger: Logger
    private let metrics: Metrics

    static let maxConcurrent = 32

    /// Deliveries being sent, or sent with their outcome not yet recorded (so not picked again).
    private var inFlight: Set<String> = []
    /// Outcomes waiting to be recorded together, a few milliseconds after the first: when small files
    /// complete back to back their deliveries answer one by one, and one transaction each would cost
    /// more than the deliveries. A delivery is resent after a crash until its outcome is recorded
    /// (at least once, as webhooks promise); meanwhile it stays in flight, so it is not sent twice.
    private lazy var outcomes = NextTurnBatch<DeliveryAttempt>(queue: queue, delay: Self.recordDelay) { [unowned self] in self.record($0) }
    static let recordDelay = DispatchTimeInterval.milliseconds(5)
    private lazy var timer = DueTimer(queue: queue, leeway: .milliseconds(10)) { [unowned self] in self.deliverDue() }
    /// Outcomes the store could not record: recorded again until it takes them, their deliveries
    /// kept in flight meanwhile, so an answered delivery is not sent again for every failed write.
    private lazy var unrecorded = UnsavedBatch<DeliveryAttempt>(queue: queue, delay: .milliseconds(Int(Completer.storeRetryInterval))) {
        [unowned self] in self.record([])
    }
    private var stopping = false
    /// A scan for due deliveries is queued: pokes until it runs (one per committed batch of job
    /// changes, many at once when small files complete) make that one scan.
    private let scanPending = Atomic<Bool>(false)

    init(store: any JobStore, sender: any WebhookSending, policy: DeliveryPolicy, metrics: Metrics, clock: Clock, logger: Logger) {
        self.store = store
        self.sender = sender
        self.policy = policy
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
    }

    func poke() {
        guard !scanPending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { self.deliverDue() }
    }

    func stop() {
        queue.sync {
            stopping = true
            timer.cancel()
            // Outcomes gathered so far are recorded now rather than after the store is closed.
            record(outcomes.take())
        }
    }

    private func deliverDue() {
        assertOnQueue()
        // Cleared before the scan, so a delivery recorded meanwhile queues another.
        scanPending.store(false, ordering: .releasing)
        guard !stopping else { return }
        let now = clock.now()
        do {
            let free = Self.maxConcurrent - inFlight.count
            if free > 0 {
                for delivery in try store.dueDeliveries(now: now, limit: free, excluding: inFlight) {
                    inFlight.insert(delivery.key)
                    sender.send(delivery, timestamp: now / 1000) { result in
                        self.queue.async { self.delivered(delivery, result) }
                    }
                }
            }
            // Due deliveries left over (all slots busy) are picked up when one finishes; the timer is for later ones.
            timer.arm(at: try store.nextDeliveryAt(after: now), now: now)
        } catch {
            logger.error("webhook delivery scan failed", metadata: ["error": "\(error)"])
            timer.arm(at: now + 1000, now: now)
        }
    }

    private func delivered(_ delivery: WebhookDelivery, _ result: TransferResult) {
        assertOnQueue()
        let attempt = policy.outcome(of: delivery, result: result, now: clock.now(), jitter: Double.random(in: 0..<1))
        let outcome = attempt.delivered ? "delivered" : (attempt.retryAt == nil ? "failed" : "retry")
        metrics.increment("fetchd_webhook_deliveries_total", labels: Metrics.labels(["outcome": outcome]))
        logger.info(attempt.delivered ? "webhook delivered" : "webhook delivery failed", metadata: [
            "webhook.id": "\(delivery.eventID)", "webhook.type": "\(delivery.type)", "http.status": "\(attempt.status ?? 0)",
            "attempt": "\(delivery.attempts + 1)", "retry": "\(attempt.retryAt != nil)", "error": "\(attempt.error ?? "")",
        ])
        outcomes.add(attempt)
    }

    /// Records every outcome since the last turn in one transaction, then fills the freed slots.
    private func record(_ newer: [DeliveryAttempt]) {
        assertOnQueue()
        let batch = unrecorded.take(adding: newer)
        do {
            try store.recordDeliveryAttempts(batch)
        } catch {
            // Still pending in the database, so sent again after a restart (at least once, as webhooks promise).
            logger.error("webhook deliveries not recorded; trying again", metadata: ["deliveries": "\(batch.count)", "error": "\(error)"])
            unrecorded.keep(batch)
            return
        }
        for attempt in batch { inFlight.remove(attempt.delivery.key) }
        deliverDue()
    }
}
