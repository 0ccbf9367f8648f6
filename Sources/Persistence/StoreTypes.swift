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

    public init(eventID: String, url: String, type: String, payload: [UInt8], attempts: Int) {
        self.eventID = eventID
        self.url = url
        self.type = type
        self.payload = payload
        self.attempts = attempts
    }
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
    /// The job's event-log payload if the caller encoded it already (off the store's one writer,
    /// which then only copies it); nil: the store encodes it. (SQLite logs the new row's snapshot instead.)
    public var statePayload: [UInt8]?

    public init(download: Download, idempotency: IdempotencyRecord?, statePayload: [UInt8]? = nil) {
        self.download = download
        self.idempotency = idempotency
        self.statePayload = statePayload
    }
}

public enum InsertOutcome: Sendable, Equatable {
    /// The job given was stored as it was given. (No copy of it: a Download is a retain per field,
    /// and a batch's outcomes are a thousand of them.)
    case created
    /// The same idempotency key with the same body: the job it made the first time.
    /// Indirect: the enum is then a word, not a Download's size, for the thousand `.created` of a batch.
    indirect case replayed(Download)
    /// The same idempotency key with a different body.
    case keyMismatch
    /// A live job already owns the destination.
    case destinationBusy

    public var isCreated: Bool {
        if case .created = self { true } else { false }
    }
}

extension Array where Element == InsertOutcome {
    /// `value` of each of `jobs` whose outcome (the same index here) is `.created`, in order. By
    /// index: iterating the jobs would copy each, a retain per field of its Download.
    @inlinable
    public func ofCreated<T>(_ jobs: [NewJob], _ value: (Download) -> T) -> [T] {
        indices.compactMap { self[$0].isCreated ? value(jobs[$0].download) : nil }
    }
}

public enum BatchInsertOutcome: Sendable, Equatable {
    case inserted([InsertOutcome])
    /// The answer kept with the batch's idempotency key.
    case replayed([UInt8])
    case keyMismatch
}

public struct DownloadPage: Sendable {
    public var items: [Download]
    public var nextCursor: String?

    public init(items: [Download], nextCursor: String?) {
        self.items = items
        self.nextCursor = nextCursor
    }
}

/// What happened to a session when one of its jobs reached a terminal state.
public struct SessionSnapshot: Sendable {
    public var session: String
    public var counts: [DownloadState: Int]
    public var webhookURLs: [String]

    public init(session: String, counts: [DownloadState: Int], webhookURLs: [String]) {
        self.session = session
        self.counts = counts
        self.webhookURLs = webhookURLs
    }
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
    /// The URL the attempt went to (the job's `url` or one of its mirrors); nil when not recorded.
    public var url: String?

    public init(number: Int, startedAt: Int64, endedAt: Int64, outcome: String, error: DownloadError?, httpStatus: Int?,
                bytesTransferred: Int64, bytesOnDisk: Int64, url: String? = nil) {
        self.number = number
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.outcome = outcome
        self.error = error
        self.httpStatus = httpStatus
        self.bytesTransferred = bytesTransferred
        self.bytesOnDisk = bytesOnDisk
        self.url = url
    }
}

/// One change to a job, for `JobStore.apply`.
public enum StoreChange {
    /// Compare-and-set of the job on the states it is expected in, with its events and attempt,
    /// as `JobStore.update` does it; with `unchangedSince`, also on the job's `revision` as the
    /// copy written was read (a client's transition: nothing written since, progress included).
    case update(Download, expecting: Set<DownloadState>, events: [WebhookEvent] = [], attempt: AttemptRecord? = nil,
                sessionFinished: ((SessionSnapshot) -> [WebhookEvent])? = nil, unchangedSince: Int64? = nil)
    case progress(id: String, bytesReceived: Int64, bytesExpected: Int64?, validator: String?)
    case attempt(AttemptRecord, of: String)
    /// Every job of the host (host:port) waits until `until`; a later time already held stays.
    case holdHost(String, until: Int64)
    /// A segmented download's progress: every range's `next`, and their sum as `bytesReceived`.
    case ranges(id: String, ranges: [RangeProgress], bytesReceived: Int64, bytesExpected: Int64?, validator: String?)
    /// An object destination's multipart upload as far as it is committed (a new upload, a part
    /// more), or nil once it is completed or aborted; written if the job is in one of `expecting`
    /// (a running job only by the node it runs on). Its result says whether it was.
    case objectUpload(id: String, upload: ObjectUpload?, expecting: Set<DownloadState>)
    /// A watch read, changed and written back, with its check jobs' changes (`WatchChange`).
    case watch(WatchChange)
}

/// The outcome of one delivery attempt.
public struct DeliveryAttempt: Sendable {
    public var delivery: WebhookDelivery
    public var delivered: Bool
    /// When to try again; nil with `delivered` false means given up for good.
    public var retryAt: Int64?
    public var status: Int?
    public var error: String?
    public var now: Int64

    public init(delivery: WebhookDelivery, delivered: Bool, retryAt: Int64?, status: Int?, error: String?, now: Int64) {
        self.delivery = delivery
        self.delivered = delivered
        self.retryAt = retryAt
        self.status = status
        self.error = error
        self.now = now
    }
}

extension WebhookDelivery {
    /// Identifies one delivery (an event to one URL).
    public var key: String { eventID + " " + url }
}

/// What one housekeeping pass deleted.
public struct Pruned: Sendable, Equatable {
    public var downloads = 0
    public var deliveries = 0
    public var idempotencyKeys = 0
    public var sessions = 0

    public init(downloads: Int = 0, deliveries: Int = 0, idempotencyKeys: Int = 0, sessions: Int = 0) {
        self.downloads = downloads
        self.deliveries = deliveries
        self.idempotencyKeys = idempotencyKeys
        self.sessions = sessions
    }

    public var isEmpty: Bool { downloads == 0 && deliveries == 0 && idempotencyKeys == 0 && sessions == 0 }
}


/// A failed job cannot come back to life: another live job owns its destination now.
public struct DestinationBusy: Error, Sendable, Equatable {
    public init() {}
}

/// `POST /sessions/{session}/{action}`: one action on every job of a session it applies to.
public enum SessionActionKind: String, Sendable, CaseIterable {
    case pause, resume, cancel, retry

    /// The states a job must be in for the action to change it.
    public var appliesTo: Set<DownloadState> {
        switch self {
        case .pause: return [.queued, .running]
        case .resume: return [.paused]
        case .cancel: return [.queued, .running, .paused]
        case .retry: return [.failed]
        }
    }

    public var target: DownloadState {
        switch self {
        case .pause: return .paused
        case .resume, .retry: return .queued
        case .cancel: return .cancelled
        }
    }
}

public struct SessionAction {
    public var kind: SessionActionKind
    public var session: String
    /// Only jobs in this state (`?state=`); nil: every job of the session.
    public var state: DownloadState?
    public var now: Int64
    /// The webhook events of one changed job, as stored after the change (cancel records
    /// `download.cancelled`); called inside the transaction, so it must be quick.
    public var events: (Download) -> [WebhookEvent]
    /// The events announcing the session finished, when the action leaves it with no live job.
    public var sessionFinished: (SessionSnapshot) -> [WebhookEvent]

    public init(kind: SessionActionKind, session: String, state: DownloadState?, now: Int64,
                events: @escaping (Download) -> [WebhookEvent], sessionFinished: @escaping (SessionSnapshot) -> [WebhookEvent]) {
        self.kind = kind
        self.session = session
        self.state = state
        self.now = now
        self.events = events
        self.sessionFinished = sessionFinished
    }
}

public struct SessionActionResult: Sendable, Equatable {
    /// Jobs of the session (in the state asked for, if one was).
    public var matched: Int
    /// The ids of the jobs the action changed.
    public var changed: [String]
    /// Those of them that were running: their transfers must be stopped.
    public var wereRunning: [String]

    public init(matched: Int, changed: [String], wereRunning: [String]) {
        self.matched = matched
        self.changed = changed
        self.wereRunning = wereRunning
    }
}

/// One state change in the global event log.
public struct LoggedEvent: Sendable, Equatable {
    /// One sequence over all jobs, increasing in commit order, never reused.
    public var sequence: Int64
    public var downloadID: String
    public var session: String
    /// The Download after the change, as the API shows it.
    public var payload: [UInt8]

    public init(sequence: Int64, downloadID: String, session: String, payload: [UInt8]) {
        self.sequence = sequence
        self.downloadID = downloadID
        self.session = session
        self.payload = payload
    }
}

/// The sequence numbers the event log holds now.
public struct EventLogSpan: Sendable, Equatable {
    /// The oldest still kept; nil when the log is empty.
    public var oldest: Int64?
    /// The newest kept (0 when there has been none).
    public var newest: Int64

    public init(oldest: Int64?, newest: Int64) {
        self.oldest = oldest
        self.newest = newest
    }
}

/// A node sharing the store (`GET /nodes`). Times are the database's, in milliseconds since the epoch.
public struct NodeRecord: Sendable, Equatable {
    public var name: String
    public var startedAt: Int64
    public var heartbeatAt: Int64
    public var runningTransfers: Int

    public init(name: String, startedAt: Int64, heartbeatAt: Int64, runningTransfers: Int) {
        self.name = name
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
        self.runningTransfers = runningTransfers
    }
}

/// A job another node runs, with its progress as that node last saved it (about once a second).
public struct RunningProgress: Sendable, Equatable {
    public var id: String
    public var session: String
    public var bytesReceived: Int64
    /// As the API shows it: the origin's size once known, else the client's hint.
    public var bytesExpected: Int64?
    /// An upload's bytes are those sent.
    public var direction: Direction

    public init(id: String, session: String, bytesReceived: Int64, bytesExpected: Int64?, direction: Direction = .download) {
        self.id = id
        self.session = session
        self.bytesReceived = bytesReceived
        self.bytesExpected = bytesExpected
        self.direction = direction
    }
}
