import DownloadCore

/// A webhook event to record in the same transaction as the state change that causes it.
public struct WebhookEvent: Sendable, Equatable {
    public var id: String
    public var type: String
    /// The exact bytes POSTed on every attempt.
    public var payload: [UInt8]
    public var urls: [String]

    public init(id: String, type: String, payload: [UInt8], urls: [String]) {
        self.id = id
        self.type = type
        self.payload = payload
        self.urls = urls
    }
}

/// One event on its way to one URL.
public struct WebhookDelivery: Sendable, Equatable {
    public var eventID: String
    public var url: String
    public var type: String
    public var payload: [UInt8]
    public var attempts: Int
}

public struct IdempotencyRecord: Sendable {
    public var principal: String
    public var key: String
    public var bodySHA256: String

    public init(principal: String, key: String, bodySHA256: String) {
        self.principal = principal
        self.key = key
        self.bodySHA256 = bodySHA256
    }
}

public enum InsertOutcome: Sendable, Equatable {
    case created(Download)
    /// The same idempotency key with the same body: the job it made the first time.
    case replayed(Download)
    /// The same idempotency key with a different body.
    case keyMismatch
    /// A live job already owns the destination.
    case destinationBusy
}

public struct DownloadPage: Sendable {
    public var items: [Download]
    public var nextCursor: String?
}

/// What happened to a session when one of its jobs reached a terminal state.
public struct SessionSnapshot: Sendable {
    public var session: String
    public var counts: [DownloadState: Int]
    public var webhookURLs: [String]
}
