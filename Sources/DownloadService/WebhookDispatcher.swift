import Dispatch
import DownloadCore
import Logging
import Store
import Transfer

/// Delivers the webhook outbox: POSTs each pending delivery when due, signed, and records the
/// outcome. A 2xx is delivered; 410 or a blocked address stops that delivery for good; anything
/// else is retried on the configured schedule (honouring Retry-After), across restarts.
final class WebhookDispatcher: @unchecked Sendable {  // all mutable state below is touched only on `queue`
    let queue = DispatchQueue(label: "fetchd.webhooks")
    let store: Store
    let engine: TransferEngine
    let signer: WebhookSigner
    let schedule: [Double]
    let addressPolicy: AddressPolicy
    let clock: Clock
    let logger: Logger
    let metrics: Metrics

    static let maxConcurrent = 32
    static let timeout = 30.0

    /// Deliveries being sent, or sent with their outcome not yet recorded (so not picked again).
    private var inFlight: Set<String> = []
    /// Outcomes waiting to be recorded together at the queue's next turn.
    private lazy var outcomes = NextTurnBatch<DeliveryAttempt>(queue: queue) { [unowned self] in self.record($0) }
    private lazy var timer = DueTimer(queue: queue, leeway: .milliseconds(10)) { [unowned self] in self.deliverDue() }
    private var stopping = false

    init(store: Store, engine: TransferEngine, configuration: Configuration, metrics: Metrics, clock: Clock, logger: Logger) {
        self.metrics = metrics
        self.store = store
        self.engine = engine
        self.signer = WebhookSigner(secrets: configuration.webhookSecrets)
        self.schedule = configuration.webhookRetrySchedule
        self.addressPolicy = configuration.addressPolicy
        self.clock = clock
        self.logger = logger
    }

    func poke() {
        queue.async { self.deliverDue() }
    }

    func stop() {
        queue.sync {
            stopping = true
            timer.cancel()
        }
    }

    private func deliverDue() {
        guard !stopping else { return }
        let now = clock.now()
        do {
            let free = Self.maxConcurrent - inFlight.count
            if free > 0 {
                for delivery in try store.dueDeliveries(now: now, limit: free, excluding: inFlight) {
                    send(delivery, now: now)
                }
            }
            // Due deliveries left over (all slots busy) are picked up when one finishes; the timer is for later ones.
            timer.arm(at: try store.nextDeliveryAt(after: now), now: now)
        } catch {
            logger.error("webhook delivery scan failed", metadata: ["error": "\(error)"])
            timer.arm(at: now + 1000, now: now)
        }
    }

    private func send(_ delivery: WebhookDelivery, now: Int64) {
        inFlight.insert(delivery.key)
        let timestamp = now / 1000
        var request = TransferRequest(url: delivery.url, sink: .memory(limit: 4096))
        request.method = .post
        request.body = delivery.payload
        request.followRedirects = false
        request.totalTimeout = Self.timeout
        request.connectTimeout = 10
        request.addressPolicy = addressPolicy
        request.headers = [
            ("Content-Type", "application/json"),
            ("webhook-id", delivery.eventID),
            ("webhook-timestamp", String(timestamp)),
        ]
        if let signature = signer.signature(id: delivery.eventID, timestamp: timestamp, body: delivery.payload) {
            request.headers.append(("webhook-signature", signature))
        }
        _ = engine.start(request, onProgress: { _ in }, onComplete: { result in
            self.queue.async { self.delivered(delivery, result) }
        })
    }

    private func delivered(_ delivery: WebhookDelivery, _ result: TransferResult) {
        let now = clock.now()
        let status = result.failure == nil ? result.httpStatus : nil
        let succeeded = status.map { (200..<300).contains($0) } ?? false
        var retryAt: Int64?
        var reason: String?
        if !succeeded {
            reason = status.map { "answered \($0)" } ?? "\(result.failure.map { "\($0)" } ?? "no response")"
            let permanent = status == 410 || { if case .blockedAddress? = result.failure { return true } else { return false } }()
            // schedule[0] is the delay before the first attempt; schedule[n] the one before attempt n + 1.
            let attemptsMade = delivery.attempts + 1
            if !permanent, attemptsMade < schedule.count {
                let delay = max(schedule[attemptsMade], min(result.retryAfter ?? 0, 86400)) * Double.random(in: 1.0..<1.1)
                retryAt = now + Int64(delay * 1000)
            }
        }
        let outcome = succeeded ? "delivered" : (retryAt == nil ? "failed" : "retry")
        metrics.increment("fetchd_webhook_deliveries_total", labels: Metrics.labels(["outcome": outcome]))
        logger.info(succeeded ? "webhook delivered" : "webhook delivery failed", metadata: [
            "webhook.id": "\(delivery.eventID)", "webhook.type": "\(delivery.type)", "http.status": "\(status ?? 0)",
            "attempt": "\(delivery.attempts + 1)", "retry": "\(retryAt != nil)", "error": "\(reason ?? "")",
        ])
        outcomes.add(DeliveryAttempt(delivery: delivery, delivered: succeeded, retryAt: retryAt, status: status, error: reason, now: now))
    }

    /// Records every outcome since the last turn in one transaction, then fills the freed slots.
    private func record(_ batch: [DeliveryAttempt]) {
        do {
            try store.recordDeliveryAttempts(batch)
        } catch {
            // Still pending in the database: each is sent again (at least once, as webhooks promise).
            logger.error("webhook deliveries not recorded", metadata: ["deliveries": "\(batch.count)", "error": "\(error)"])
        }
        for attempt in batch { inFlight.remove(attempt.delivery.key) }
        deliverDue()
    }

}
