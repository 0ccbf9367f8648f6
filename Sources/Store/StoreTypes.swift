import DownloadCore

/// A webhook event to record in the same transaction as the state change that causes it.
public struct WebhookEvent: Sendable, Equatable {
    public var id: String
    public var type: String
    /// The exact bytes POSTed on every attempt.
    public var payload: [UInt8]
    public var urls: [String]
    /// The session of the job (or, for `session.finished`, the session) the event is about.
    public var session: String

    public init(id: String, type: String, payload: [UInt8], urls: [String], session: String) {
        self.id = id
        self.type = type
        self.payload = payload
        self.urls = urls
        self.session = session
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

/// A job to insert, with the idempotency key it came with.
public struct NewJob: Sendable {
    public var download: Download
    public var idempotency: IdempotencyRecord?

    public init(download: Download, idempotency: IdempotencyRecord?) {
        self.download = download
        self.idempotency = idempotency
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

/// How one attempt of a job went.
public struct AttemptRecord: Sendable, Equatable {
    public var number: Int
    public var startedAt: Int64
    public var endedAt: Int64
    /// `completed`, `retry`, `failed`, `paused`, `cancelled` or `interrupted` (fetchd stopped).
    public var outcome: String
    public var error: DownloadError?
    public var httpStatus: Int?
    /// Body bytes received in this attempt.
    public var bytesTransferred: Int64
    /// The partial file's length when the attempt ended.
    public var bytesOnDisk: Int64

    public init(number: Int, startedAt: Int64, endedAt: Int64, outcome: String, error: DownloadError?, httpStatus: Int?,
                bytesTransferred: Int64, bytesOnDisk: Int64) {
        self.number = number
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.outcome = outcome
        self.error = error
        self.httpStatus = httpStatus
        self.bytesTransferred = bytesTransferred
        self.bytesOnDisk = bytesOnDisk
    }
}
