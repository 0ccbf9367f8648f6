import DownloadCore
import Persistence
import Store
import Synchronization

/// A real store some of whose writes do not take while their switch is on: the recording of
/// webhook delivery outcomes fails (`recordingFails`, on from the start), as when the database
/// cannot be written; and the jobs a scheduling pass chooses are left unclaimed (`claimsLost`), as
/// when another node claimed them first. Everything else goes to the store.
final class FailingWrites: JobStore {
    struct WriteFailed: Error {}

    let store: SQLiteStore
    let recordingFails = Atomic<Bool>(true)
    let claimsLost = Atomic<Bool>(false)
    /// How many recordings failed.
    let failures = Atomic<Int>(0)

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
    func download(id: String) throws -> Download? { try store.download(id: id) }
    func list(state: DownloadState?, session: String?, limit: Int, cursor: String?) throws -> DownloadPage {
        try store.list(state: state, session: session, limit: limit, cursor: cursor)
    }
    func attempts(of id: String) throws -> [AttemptRecord] { try store.attempts(of: id) }
    func idempotentDownload(principal: String, key: String) throws -> (bodySHA256: String, download: Download)? {
        try store.idempotentDownload(principal: principal, key: key)
    }
    func counts(session: String?) throws -> [DownloadState: Int] { try store.counts(session: session) }
    func queueDepth() throws -> QueueDepth { try store.queueDepth() }
    func webhookBacklog() throws -> WebhookBacklog { try store.webhookBacklog() }
    func apply(_ changes: [StoreChange]) throws -> [Bool] { try store.apply(changes) }
    func claim(_ pass: ClaimPass) throws -> ClaimResult { try store.claim(losing(pass)) }
    func applyAndClaim(_ changes: [StoreChange], _ pass: ClaimPass) throws -> (applied: [Bool], claim: ClaimResult) {
        try store.applyAndClaim(changes, losing(pass))
    }

    /// With `claimsLost`: the pass chooses as always, but the store is told it chose nothing.
    private func losing(_ pass: ClaimPass) -> ClaimPass {
        guard claimsLost.load(ordering: .sequentiallyConsistent) else { return pass }
        var lost = pass
        lost.choose = { candidate in
            _ = pass.choose(candidate)
            return nil
        }
        return lost
    }
    func interruptedJobs() throws -> [Download] { try store.interruptedJobs() }
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
