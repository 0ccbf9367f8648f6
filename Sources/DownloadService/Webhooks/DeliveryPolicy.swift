import DownloadCore
import Persistence
import Transfer

/// How one webhook delivery attempt counts: a 2xx is delivered; a 410 or a blocked address stops
/// that delivery for good; anything else is tried again after the schedule's next delay (never
/// sooner than a Retry-After, up to a day), until the schedule runs out. Pure.
struct DeliveryPolicy: Sendable {
    /// `schedule[0]` is the delay before the first attempt; `schedule[n]` the one before attempt n + 1.
    let schedule: [Duration]

    static let maxRetryAfter: Duration = .seconds(86400)

    /// `jitter` in 0..<1 spreads retries by up to 10 %.
    func outcome(of delivery: WebhookDelivery, result: TransferResult, now: Int64, jitter: Double) -> DeliveryAttempt {
        let status = result.failure == nil ? result.httpStatus : nil
        if let status, (200..<300).contains(status) {
            return DeliveryAttempt(delivery: delivery, delivered: true, retryAt: nil, status: status, error: nil, now: now)
        }
        let reason = status.map { "answered \($0)" } ?? result.failure.map { "\($0)" } ?? "no response"
        let permanent: Bool
        if status == 410 { permanent = true } else if case .blockedAddress? = result.failure { permanent = true } else { permanent = false }
        let attemptsMade = delivery.attempts + 1
        var retryAt: Int64?
        if !permanent, attemptsMade < schedule.count {
            let retryAfter = min(Duration.milliseconds(Int64((result.retryAfter ?? 0) * 1000)), Self.maxRetryAfter)
            let delay = max(schedule[attemptsMade], retryAfter) * (1 + 0.1 * jitter)
            retryAt = now + delay.wholeMilliseconds
        }
        return DeliveryAttempt(delivery: delivery, delivered: false, retryAt: retryAt, status: status, error: reason, now: now)
    }
}
