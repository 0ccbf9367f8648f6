import DownloadCore

/// Where watches are kept (`POST /watches`), beside the jobs their checks are. A watch's row and
/// its check jobs change together: a check's settlement, a client's change of the watch and its
/// check's reschedule each commit in one transaction (`StoreChange.watch`).
public protocol WatchStore {
    /// Stores a new watch with its first check job, in one transaction: both or neither. Two
    /// watches never share a destination, nor a watch and a live job (its check holds the
    /// destination as any live job does). An idempotency key is kept with the watch.
    func insertWatch(_ watch: Watch, firstCheck: Download, idempotency: IdempotencyRecord?) throws -> WatchInsertOutcome
    func watch(id: String) throws -> Watch?
    /// Newest first; the cursor is the id of the last item of the previous page.
    func watches(limit: Int, cursor: String?) throws -> WatchPage
    func watchCount() throws -> Int
    /// Up to `limit` active watches whose check job is no longer live — one a client ended
    /// through `/downloads` or a session action, or one a completion at start settled — to be
    /// given a new check.
    func watchesWithoutLiveCheck(limit: Int) throws -> [String]
}

public enum WatchInsertOutcome: Sendable, Equatable {
    case created
    /// The same idempotency key with the same body: the watch it made the first time.
    case replayed(Watch)
    case keyMismatch
    /// Another watch or a live job owns the destination.
    case destinationBusy
}

public struct WatchPage: Sendable {
    public var items: [Watch]
    public var nextCursor: String?

    public init(items: [Watch], nextCursor: String?) {
        self.items = items
        self.nextCursor = nextCursor
    }
}

/// A read-modify-write of one watch in an `apply` transaction (`StoreChange.watch`).
public struct WatchChange {
    public var id: String
    /// Applied only if the change just before it in the same `apply` was: a check's settlement
    /// writes the watch only when its own transition was written.
    public var afterPrevious: Bool
    /// Given the watch as stored (locked until the commit) and the state of its check job now
    /// (nil when it has none or the job is gone): what to write, or nil to write nothing. Runs
    /// inside the transaction: it must be quick and must not call the store. Throwing undoes the
    /// whole `apply`, the changes before it included, and `apply` throws the same: for a watch
    /// whose change holds only with theirs.
    public var write: (Watch, DownloadState?) throws -> WatchWrite?

    public init(id: String, afterPrevious: Bool = false, write: @escaping (Watch, DownloadState?) throws -> WatchWrite?) {
        self.id = id
        self.afterPrevious = afterPrevious
        self.write = write
    }
}

public struct WatchWrite {
    /// The watch as it becomes; nil deletes it.
    public var watch: Watch?
    public var events: [WebhookEvent]
    /// A new check job to insert (the next check after one that ended).
    public var newCheck: Download?
    /// A queued check job's new due time (a change of timing, a check asked for now).
    public var reschedule: (id: String, runAt: Int64)?
    public var now: Int64

    public init(watch: Watch?, events: [WebhookEvent] = [], newCheck: Download? = nil, reschedule: (id: String, runAt: Int64)? = nil,
                now: Int64) {
        self.watch = watch
        self.events = events
        self.newCheck = newCheck
        self.reschedule = reschedule
        self.now = now
    }
}
