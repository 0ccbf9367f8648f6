import DownloadCore

/// fetchd's durable state, as the service needs it: the seam between the application and a
/// database. SQLite (`SQLiteStore`) is the embedded implementation; a shared-database backend serves
/// many nodes through the same calls. Every state change is one transaction and a compare-and-set
/// on the state the caller expects; webhook events are recorded in the transaction of the change
/// that causes them. Any method may throw when the database fails: callers must never read a
/// thrown error as "no such job".
///
/// Times are milliseconds since the Unix epoch.
public protocol JobStore: WatchStore, Sendable {
    // MARK: Intake

    /// Inserts new jobs in one transaction (group commit), each as it would be alone, in order: a
    /// later job sees the earlier ones (their destinations and idempotency keys). One outcome per
    /// job; if the transaction fails nothing is stored and the error is thrown.
    func insert(_ jobs: [NewJob]) throws -> [InsertOutcome]

    /// A batch of submissions (`POST /downloads/batch`) in one transaction, each job as `insert`
    /// takes it. With an idempotency key the batch is one request: the first time, `answer` is
    /// asked (inside the transaction) for the response to the outcomes and it is kept with the
    /// key, as long as single keys are kept; the same key again gives that answer back
    /// (`replayed`) with the same body digest, or `keyMismatch` with another, inserting nothing.
    func insertBatch(_ jobs: [NewJob], idempotency: IdempotencyRecord?, now: Int64,
                     answer: ([InsertOutcome]) -> [UInt8]) throws -> BatchInsertOutcome

    // MARK: Reads (they see every committed write and keep working while writes fail)

    func download(id: String) throws -> Download?
    /// Jobs of `kind`, newest first; the cursor is the id of the last item of the previous page.
    func list(kind: Direction, state: DownloadState?, session: String?, limit: Int, cursor: String?) throws -> DownloadPage
    /// The attempts of a job, oldest first.
    func attempts(of id: String) throws -> [AttemptRecord]
    /// The body digest and the job an idempotency key made, if the key is known.
    func idempotentDownload(principal: String, key: String) throws -> (bodySHA256: String, download: Download)?
    /// Jobs by state, every state present: of one session, or of all.
    func counts(session: String?) throws -> [DownloadState: Int]
    /// Upload jobs by state, every state present (`counts` has them among all jobs).
    func uploadCounts() throws -> [DownloadState: Int]
    func queueDepth() throws -> QueueDepth
    func webhookBacklog() throws -> WebhookBacklog

    // MARK: Transitions

    /// Applies the changes in order, in one transaction. One result per change: false where a
    /// compare-and-set found the job in another state. Nothing is applied if one throws.
    /// A state change writes the state's columns (`ColumnOwner.state` in `DownloadTable`), never
    /// the client's, and moves the job's `revision` on, as a progress update does. Written from a
    /// copy that may be older than the row (a client's), it says so with `unchangedSince`: the
    /// progress an attempt saved meanwhile is then never undone by it. A failed job
    /// brought back to life (`queued`) while another live job owns its destination throws
    /// `DestinationBusy`.
    func apply(_ changes: [StoreChange]) throws -> [Bool]

    /// A client's change of a live job (`PATCH`), as compare-and-set on its `revision`: writes the
    /// client's columns (`ColumnOwner.client` in `DownloadTable`) — which state changes never
    /// write — and, for a queued job, its new `runAt` (it waits for the next promotion), and
    /// `awaitingURLSince` (a new URL ends a URL refresh wait). Every other field is left as
    /// stored. Returns the job as stored after the change (its revision moved on), or nil when the
    /// job is not live or no longer at `revision`. A running job's scheduler takes the change onto
    /// its own copy with `Download.takingClientFields(from:)`.
    func change(_ download: Download, expectingRevision revision: Int64) throws -> Download?

    /// A session action in one set-based transaction: every job of the session in a state the
    /// action applies to (and in `state`, if given) moves to the action's target as the single-job
    /// endpoints move it — pause clears `nextAttemptAt`; resume and retry make the job due from
    /// `max(now, earliestBeginDate)`, clear its error, and retry also its `finishedAt`, `sha256`
    /// and `nextAttemptAt` and starts its retry budget over (`attemptsBeforeRetry = attempts`);
    /// cancel sets `finishedAt = now` and records `action.events` of each job. A failed job whose
    /// destination another live job owns is left failed. Every changed job's revision moves on.
    func act(_ action: SessionAction) throws -> SessionActionResult

    /// One scheduling step in one transaction: makes jobs whose time has come due, reads the best
    /// due candidates lane by lane, lets `pass.choose` decide on each in order, claims the chosen
    /// ones (compare-and-set on `queued`), and says when the queue next changes by itself.
    func claim(_ pass: ClaimPass) throws -> ClaimResult

    /// Jobs left `running` by a process that stopped without settling them (at start: all of them).
    func interruptedJobs() throws -> [Download]

    /// Up to `limit` ended jobs whose multipart upload is to be aborted: completed or cancelled
    /// ones, and failed ones that a retry cannot go on from (no bytes kept) or that finished before
    /// `keptUntil` (about to be pruned). Pruning leaves a job until its upload is gone.
    func uploadsToAbort(failedBefore keptUntil: Int64, limit: Int) throws -> [Download]

    /// Hosts held by a `holdHost` change that still hold after `now`, with the time each is held until.
    func hostBackoffs(after now: Int64) throws -> [String: Int64]

    // MARK: Event log (GET /events)

    /// Every state change — insert, claim, each `update` that applies, each job a session action
    /// changes — appends the job as it became to one global log in the change's transaction.
    /// Events after `sequence`, oldest first, of one session or of all.
    func loggedEvents(after sequence: Int64, session: String?, limit: Int) throws -> [LoggedEvent]
    func eventLogSpan() throws -> EventLogSpan
    /// Deletes events logged before `before`, always keeping the newest `keepingLast`.
    func pruneEventLog(before: Int64, keepingLast: Int) throws -> Int

    // MARK: Webhook outbox

    /// Pending deliveries that are due, oldest first, leaving out `inFlight` and a
    /// `session.finished` whose URL still has earlier events of its session to settle.
    func dueDeliveries(now: Int64, limit: Int, excluding inFlight: Set<String>) throws -> [WebhookDelivery]
    /// When the next pending delivery that is not yet due becomes due.
    func nextDeliveryAt(after now: Int64) throws -> Int64?
    /// Records the outcomes of delivery attempts in one transaction.
    func recordDeliveryAttempts(_ attempts: [DeliveryAttempt]) throws

    // MARK: Housekeeping

    /// Deletes terminal jobs finished before `finishedBefore`, settled deliveries before
    /// `settledBefore`, idempotency keys made before `keysBefore`, and whatever else of the
    /// backend's own bookkeeping has served its purpose; compacts as the backend needs.
    func prune(finishedBefore: Int64, settledBefore: Int64, keysBefore: Int64) throws -> Pruned
    /// True when a write transaction can be taken now (for `/readyz`).
    func isWritable() -> Bool
    func close()

    // MARK: Many nodes (a store only this process uses answers for itself)

    /// The live nodes sharing this store, by name; nil for a store only this process uses.
    func liveNodes() throws -> [NodeRecord]?
    /// Renews this node's lease on its running jobs. False when the other nodes had found it dead
    /// and taken its running jobs over: the caller stops its transfers (keeping their partial data),
    /// whose settlements the store now refuses. A store only this process uses is always true.
    func renewLease() throws -> Bool
    /// Running jobs of nodes found dead since the last call, now leased to this node, to be settled
    /// as at start (`interruptedJobs`). Empty for a store only this process uses.
    func takeOverAbandonedJobs() throws -> [Download]
    /// Of `ids`, jobs this node runs, those that no longer run under its lease (cancelled or paused
    /// through another node, or taken over), with their state now; ids no longer stored are left out.
    func jobsNotRunningHere(_ ids: [String]) throws -> [String: DownloadState]
    /// The jobs running under other nodes' leases, with their saved progress, so that event
    /// streams on this node can report it. Empty for a store only this process uses.
    func runningElsewhere() throws -> [RunningProgress]
    /// Calls `wake` (on a queue of the store's) when another node may have made work for this one;
    /// never, for a store only this process uses.
    func watchForWork(_ wake: @escaping @Sendable () -> Void)

    // MARK: One turn of the scheduler

    /// `apply(changes)` and then `claim(pass)`, in one transaction: a turn that settles the attempts
    /// that ended and claims jobs for the slots they freed commits once. Results as the two calls
    /// give them; nothing of either is stored if it throws.
    func applyAndClaim(_ changes: [StoreChange], _ pass: ClaimPass) throws -> (applied: [Bool], claim: ClaimResult)
}

extension JobStore {
    /// A compare-and-set of one job with its events, as `apply([.update(...)])`.
    public func update(
        _ download: Download, expecting: Set<DownloadState>, events: [WebhookEvent] = [], attempt: AttemptRecord? = nil,
        sessionFinished: ((SessionSnapshot) -> [WebhookEvent])? = nil, unchangedSince revision: Int64? = nil
    ) throws -> Bool {
        try apply([.update(download, expecting: expecting, events: events, attempt: attempt, sessionFinished: sessionFinished,
                           unchangedSince: revision)])[0]
    }

    public func insert(_ download: Download, idempotency: IdempotencyRecord?) throws -> InsertOutcome {
        try insert([NewJob(download: download, idempotency: idempotency)])[0]
    }

    public func counts() throws -> [DownloadState: Int] {
        try counts(session: nil)
    }

    /// Records the outcome of one delivery attempt: `retryAt` nil and `delivered` false means given up for good.
    public func recordDeliveryAttempt(_ delivery: WebhookDelivery, delivered: Bool, retryAt: Int64?, status: Int?,
                                      error: String?, now: Int64) throws {
        try recordDeliveryAttempts([
            DeliveryAttempt(delivery: delivery, delivered: delivered, retryAt: retryAt, status: status, error: error, now: now),
        ])
    }
}

/// The two orders due jobs are taken in.
public enum Lane: Int, Sendable, CaseIterable {
    /// Normal jobs, and discretionary ones that have waited their maximum delay: priority, then fair order.
    case normal = 0
    /// Discretionary jobs: smaller expected size first, then priority, then fair order.
    case discretionary = 1
}

/// What one scheduling step asks of the store. The closures run inside the store's transaction,
/// synchronously, so they must be quick and must not call the store.
public struct ClaimPass {
    public var now: Int64
    /// Discretionary jobs created at or before this run like normal ones (they move lanes).
    public var agedBefore: Int64
    /// How long a discretionary job waits before it ages into the normal lane, for the next change.
    public var agingDelay: Int64
    /// Asked before each lane, in `Lane.allCases` order: how many candidates to read and which
    /// hosts to leave out (they are at their limit); nil skips the lane.
    public var candidates: (Lane) -> (limit: Int, excludingHosts: [String])?
    /// Asked for each candidate, best first: the job as it should be stored when it starts
    /// (state `running`), or nil to leave it queued.
    public var choose: (Download) -> Download?
    /// Asked after each candidate: false once no more can start (every slot taken), so the rest of
    /// the lane's candidates are neither read nor decoded.
    public var wantsMore: () -> Bool = { true }
    /// Told, before the first lane, how many jobs other nodes run per host (under the claim lock,
    /// so exact among live nodes), for the per-host limit to hold across them. Not asked by a
    /// store only this process uses.
    public var otherNodesRunning: ([String: Int]) -> Void = { _ in }

    public init(now: Int64, agedBefore: Int64, agingDelay: Int64,
                candidates: @escaping (Lane) -> (limit: Int, excludingHosts: [String])?,
                choose: @escaping (Download) -> Download?) {
        self.now = now
        self.agedBefore = agedBefore
        self.agingDelay = agingDelay
        self.candidates = candidates
        self.choose = choose
    }
}

public struct ClaimResult: Sendable {
    /// The jobs claimed, as stored (`running`); a chosen job that changed meanwhile is not among them.
    public var claimed: [Download]
    /// When a queued job next becomes due or ages into the normal lane, if any will.
    public var nextQueueChange: Int64?

    public init(claimed: [Download], nextQueueChange: Int64?) {
        self.claimed = claimed
        self.nextQueueChange = nextQueueChange
    }
}

/// Queued jobs by why they wait, as far as the database knows.
public struct QueueDepth: Sendable, Equatable {
    public var retry = 0
    public var earliestBeginDate = 0
    /// Due, waiting for a slot, their host, the discretionary rules or disk space.
    public var due = 0

    public init(retry: Int = 0, earliestBeginDate: Int = 0, due: Int = 0) {
        self.retry = retry
        self.earliestBeginDate = earliestBeginDate
        self.due = due
    }
}

/// Webhook deliveries not yet settled, and when the oldest of their events happened.
public struct WebhookBacklog: Sendable, Equatable {
    public var pending: Int
    public var oldestEventAt: Int64?

    public init(pending: Int, oldestEventAt: Int64?) {
        self.pending = pending
        self.oldestEventAt = oldestEventAt
    }
}
