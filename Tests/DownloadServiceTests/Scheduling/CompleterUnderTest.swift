import Dispatch
import DownloadCore
@testable import DownloadService
import Persistence
import Synchronization
import Testing
import Transfer

/// A completer on its own queue over a fixture's real store (wrapped, so that its writes can
/// fail), with a stand-in for the dispatcher's pass that claims every due job, and directory syncs
/// that can be made to fail. Records the passes and what followed each commit.
final class CompleterUnderTest: Sendable {
    let fixture: ServiceFixture
    let store: FailingWrites
    let queue = DispatchQueue(label: "fetchd.test.completer")
    let completer: Completer
    /// In order: "pass" as each pass that committed returns, and what each write's `committed` was told.
    let log = Mutex<[String]>([])
    /// The jobs each committed pass claimed, in order.
    let claimed = Mutex<[[String]]>([])
    let syncsFail = Atomic<Bool>(false)
    let savedWhileStopping = Atomic<Int>(0)

    init() throws {
        fixture = try ServiceFixture()
        store = FailingWrites(fixture.store)
        completer = Completer(queue: queue, store: store, logger: ServiceFixture.quiet)
        completer.runPass = { [unowned self] claim in pass(claim) }
        completer.syncDirectories = { [unowned self] directories in
            return syncsFail.load(ordering: .sequentiallyConsistent) ? "cannot sync: I/O error" : PlacedDirectory.sync(directories)
        }
        completer.savedWhileStopping = { [unowned self] in savedWhileStopping.add(1, ordering: .sequentiallyConsistent) }
    }

    /// As the dispatcher's pass: claims every due job, or reports that the store failed.
    private func pass(_ claim: (ClaimPass) throws -> ClaimResult) -> Bool {
        let now = fixture.clock.now
        let pass = ClaimPass(now: now, agedBefore: now, agingDelay: 0, candidates: { _ in (limit: 100, excludingHosts: []) },
                             choose: { $0.startingAttempt(now: now) })
        guard let result = try? claim(pass) else { return false }
        claimed.withLock { $0.append(result.claimed.map(\.id)) }
        log.withLock { $0.append("pass") }
        return true
    }

    /// Runs `body` on the queue, as the scheduler's parts call the completer.
    func onQueue(_ body: () -> Void) {
        queue.sync(execute: body)
    }

    /// Adds writes in one turn of the queue.
    func add(_ writes: JobWrite...) {
        onQueue { writes.forEach(completer.add) }
    }

    /// Waits for the queue's next turn (what the last `onQueue` asked of it).
    func turn() {
        queue.sync {}
    }

    /// Jobs stored and claimed: running, as the attempts whose writes come in.
    func running(_ ids: String...) throws {
        for id in ids {
            try fixture.submit(id)
            _ = try fixture.claim(id)
        }
    }

    /// A running job's progress, logged as "<id> <bytes>".
    func progress(_ id: String, _ bytes: Int64) -> JobWrite {
        logged("\(id) \(bytes)", JobWrite(changes: [.progress(id: id, bytesReceived: bytes, bytesExpected: nil, validator: nil)]))
    }

    /// `write`, whose commit, after what follows it, logs "<label> <results>".
    func logged(_ label: String, _ write: JobWrite) -> JobWrite {
        var logged = write
        logged.committed = { results in
            write.committed(results)
            self.log.withLock { $0.append("\(label) \(results)") }
        }
        return logged
    }

    /// The settlement of a running job's attempt whose whole body came in: its file is placed
    /// (in `files/`) and its write waits for that directory's sync.
    func completion(_ id: String) throws -> JobWrite {
        let job = try fixture.job(id)
        let body = Array("\(id)'s bytes".utf8)
        let digest = try fixture.writePartial(id, body)
        let result = TransferResult(httpStatus: 200, bytesOnDisk: Int64(body.count), bytesThisAttempt: Int64(body.count),
                                    bytesExpected: Int64(body.count), sha256: digest)
        let write = Settlement(context: fixture.settlementContext(), job: job, result: result, startedAt: job.startedAt ?? 0,
                               now: fixture.clock.now, jitter: 0).settle()
        #expect(write.placedIn != nil)
        return write
    }

    func bytes(_ id: String) throws -> Int64 {
        try fixture.job(id).bytesReceived
    }

    func state(_ id: String) throws -> DownloadState {
        try fixture.job(id).state
    }
}
