import Persistence
import Transfer

/// Sends one webhook delivery and reports how it went, once.
protocol WebhookSending: Sendable {
    /// `timestamp` is the attempt's Unix time in seconds, signed with the body.
    func send(_ delivery: WebhookDelivery, timestamp: Int64, completion: @escaping @Sendable (TransferResult) -> Void)
}

/// POSTs deliveries through the transfer engine, signed per Standard Webhooks, without following
/// redirects, under the same address policy as downloads.
struct EngineWebhookSender: WebhookSending {
    let transfers: any TransferRunning
    let signer: WebhookSigner
    let addressPolicy: AddressPolicy

    static let timeout = 30.0
    static let connectTimeout = 10.0

    func send(_ delivery: WebhookDelivery, timestamp: Int64, completion: @escaping @Sendable (TransferResult) -> Void) {
        var request = TransferRequest(url: delivery.url, sink: .memory(limit: 4096))
        request.method = .post
        request.body = delivery.payload
        request.followRedirects = false
        request.totalTimeout = Self.timeout
        request.connectTimeout = Self.connectTimeout
        request.addressPolicy = addressPolicy
        request.headers = [
            ("Content-Type", "application/json"),
            ("webhook-id", delivery.eventID),
            ("webhook-timestamp", String(timestamp)),
        ]
        if let signature = signer.signature(id: delivery.eventID, timestamp: timestamp, body: delivery.payload) {
            request.headers.append(("webhook-signature", signature))
        }
        _ = transfers.start(request, onProgress: { _ in }, onComplete: completion)
    }
}
