import DownloadCore
import Persistence
import SQLiteStore
import Synchronization

/// A real store some of whose writes do not take while their switch is on: the recording of
/// webhook delivery outcomes fails (`recordingFails`, on from the start), as when the database
/// cannot be written; the jobs a scheduling pass chooses are left unclaimed (`claimsLost`), as
/// when another node claimed them first; and no job write or claim commits (`jobWritesFail`), as
/// when the database's disk is full: a claim still reads its candidates and lets the pass choose
/// before its transaction fails. It can also report what other nodes run (`elsewhere`), as a
/// store shared by several nodes does. Everything else goes to the store.
final class FailingWrites: JobStore {
    struct WriteFailed: Error {}

    /// A transaction of job writes or claims asked of the store, taken or not.
    enum Transaction: Equatable {
        case apply(changes: Int)
        case claim
        case applyAndClaim(changes: Int)

        /// Whether it ran a scheduling pass.
        var claims: Bool {
            if case .apply = self { return false }
            return true
        }
    }

    let store: SQLiteStore
    let recordingFails = Atomic<Bool>(true)
    let claimsLost = Atomic<Bool>(false)
    let jobWritesFail = Atomic<Bool>(false)
    /// Jobs other nodes run, by host:port, told to each claim pass; nil: a store only this node uses.
    let elsewhere = Mutex<[String: Int]?>(nil)
    /// How many recordings failed.
    let failures = Atomic<Int>(0)
    /// Every transaction of job writes or claims asked for, in order.
    let transactions = Mutex<[Transaction]>([])

    init(_ store: SQLiteStore) {
        self.store = store
    }

    func recordDeliveryAttempts(_ attempts: [DeliveryAttempt]) throws {
        if recordingFails.load(ordering: .sequentiallyConsistent) {
            failures.add(1, ordering: .sequentiallyConsistent)
            throw WriteFailed()
        }
        try store.recordDeliveryAttempts(attempts)
    }

    func insert(_ jobs: [NewJob]) throws -> [InsertOutcome] { try store.insert(jobs) }
    func insertWatch(_ watch: Watch, firstCheck: Download, idempotency: IdempotencyRecord?) throws -> WatchInsertOutcome {
        try store.insertWatch(watch, firstCheck: firstCheck, idempotency: idempotency)
    }
    func watch(id: String) throws -> Watch? { try store.watch(id: id) }
    func watches(limit: Int, cursor: String?) throws -> WatchPage { try store.watches(limit: limit, cursor: cursor) }
    func watchCount() throws -> Int { try store.watchCount() }
    func watchesWithoutLiveCheck(limit: Int) throws -> [String] { try store.watchesWithoutLiveCheck(limit: limit) }
    func download(id: String) throws -> Download? { try store.download(id: id) }
    func list(kind: Direction, state: DownloadState?, session: String?, limit: Int, cursor: String?) throws -> DownloadPage {
        try store.list(kind: kind, state: state, session: session, limit: limit, cursor: cursor)
    }
    func attempts(of id: String) throws -> [AttemptRecord] { try store.attempts(of: id) }
    func idempotentDownload(principal: String, key: String) throws -> (bodySHA256: String, download: Download)? {
        try store.idempotentDownload(principal: principal, key: key)
    }
    func counts(session: String?) throws -> [DownloadState: Int] { try store.counts(session: session) }
    func uploadCounts() throws -> [DownloadState: Int] { try store.uploadCounts() }
    func queueDepth() throws -> QueueDepth { try store.queueDepth() }
    func webhookBacklog() throws -> WebhookBacklog { try store.webhookBacklog() }
    func apply(_ changes: [StoreChange]) throws -> [Bool] {
        transactions.withLock { $0.append(.apply(changes: changes.count)) }
        guard !jobWritesFail.load(ordering: .sequentiallyConsistent) else { throw WriteFailed() }
        return try store.apply(changes)
    }

    func claim(_ pass: ClaimPass) throws -> ClaimResult {
        transactions.withLock { $0.append(.claim) }
        try failIfJobWritesFail(pass)
        return try store.claim(steered(pass))
    }

    func applyAndClaim(_ changes: [StoreChange], _ pass: ClaimPass) throws -> (applied: [Bool], claim: ClaimResult) {
        transactions.withLock { $0.append(.applyAndClaim(changes: changes.count)) }
        try failIfJobWritesFail(pass)
        return try store.applyAndClaim(changes, steered(pass))
    }

    /// With `jobWritesFail`: the pass reads and chooses, nothing is claimed, and the transaction fails.
    private func failIfJobWritesFail(_ pass: ClaimPass) throws {
        guard jobWritesFail.load(ordering: .sequentiallyConsistent) else { return }
        _ = try store.claim(steered(pass, lost: true))
        throw WriteFailed()
    }

    /// The pass as the store runs it: told first what other nodes run, and with `claimsLost` (or
    /// `lost`) choosing as always while the store is told it chose nothing.
    private func steered(_ pass: ClaimPass, lost: Bool = false) -> ClaimPass {
        if let elsewhere = elsewhere.withLock({ $0 }) { pass.otherNodesRunning(elsewhere) }
        guard lost || claimsLost.load(ordering: .sequentiallyConsistent) else { return pass }
        var steered = pass
        steered.choose = { candidate in
            _ = pass.choose(candidate)
            return nil
        }
        return steered
    }

    func interruptedJobs() throws -> [Download] { try store.interruptedJobs() }
    func uploadsToAbort(failedBefore keptUntil: Int64, limit: Int) throws -> [Download] {
        try store.uploadsToAbort(failedBefore: keptUntil, limit: limit)
    }
    func hostBackoffs(after now: Int64) throws -> [String: Int64] { try store.hostBackoffs(after: now) }
    func dueDeliveries(now: Int64, limit: Int, excluding inFlight: Set<String>) throws -> [WebhookDelivery] {
        try store.dueDeliveries(now: now, limit: limit, excluding: inFlight)
    }
    func nextDeliveryAt(after now: Int64) throws -> Int64? { try store.nextDeliveryAt(after: now) }
    func prune(finishedBefore: Int64, settledBefore: Int64, keysBefore: Int64) throws -> Pruned {
        try store.prune(finishedBefore: finishedBefore, settledBefore: settledBefore, keysBefore: keysBefore)
    }
    func insertBatch(_ jobs: [NewJob], idempotency: IdempotencyRecord?, now: Int64,
                     answer: ([InsertOutcome]) -> [UInt8]) throws -> BatchInsertOutcome {
        try store.insertBatch(jobs, idempotency: idempotency, now: now, answer: answer)
    }
    func change(_ download: Download, expectingRevision revision: Int64) throws -> Download? {
        try store.change(download, expectingRevision: revision)
    }
    func act(_ action: SessionAction) throws -> SessionActionResult { try store.act(action) }
    func loggedEvents(after sequence: Int64, session: String?, limit: Int) throws -> [LoggedEvent] {
        try store.loggedEvents(after: sequence, session: session, limit: limit)
    }
    func eventLogSpan() throws -> EventLogSpan { try store.eventLogSpan() }
    func pruneEventLog(before: Int64, keepingLast: Int) throws -> Int { try store.pruneEventLog(before: before, keepingLast: keepingLast) }
    func isWritable() -> Bool { store.isWritable() }
    func close() { store.close() }
    func liveNodes() throws -> [NodeRecord]? { try store.liveNodes() }
    func renewLease() throws -> Bool { try store.renewLease() }
    func takeOverAbandonedJobs() throws -> [Download] { try store.takeOverAbandonedJobs() }
    func jobsNotRunningHere(_ ids: [String]) throws -> [String: DownloadState] { try store.jobsNotRunningHere(ids) }
    func runningElsewhere() throws -> [RunningProgress] { try store.runningElsewhere() }
    func watchForWork(_ wake: @escaping @Sendable () -> Void) { store.watchForWork(wake) }
}
