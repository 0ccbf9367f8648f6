import DownloadCore
import Foundation
@testable import DownloadService
import Persistence
import Testing
import TestSupport

/// A scheduler over a fixture's real store (wrapped, so that a test can make its writes fail or
/// have other nodes run jobs) and the fake engine: the test runs its passes and ends its attempts,
/// and stops it at the end (its transfers stopped, its timer disarmed).
struct RunningScheduler {
    let fixture: ServiceFixture
    let transfers = FakeTransfers()
    let store: FailingWrites
    let scheduler: Scheduler

    /// `takesUploads`: upload jobs' sources are under the fixture's `uploads/` (`uploadRoot`).
    init(_ settings: [String: String] = [:], takesUploads: Bool = false) throws {
        fixture = try ServiceFixture()
        store = FailingWrites(fixture.store)
        store.recordingFails.store(false, ordering: .sequentiallyConsistent)
        if takesUploads { try FileManager.default.createDirectory(atPath: fixture.directory + "/uploads", withIntermediateDirectories: true) }
        scheduler = try fixture.scheduler(settings, transfers: transfers, store: store,
                                          uploadRoot: takesUploads ? fixture.directory + "/uploads" : nil)
    }

    var uploadRoot: String { fixture.directory + "/uploads" }

    var clock: FakeClock { fixture.clock }

    /// One scheduling pass, on the scheduler's queue as every pass runs.
    func pass() {
        scheduler.queue.sync { scheduler.schedule() }
    }

    /// Waits for the queue's work, and for the turn that work asked for (a batch's commit, a pass).
    func settle() {
        scheduler.queue.sync {}
        scheduler.queue.sync {}
    }

    /// How many scheduling passes asked the store to claim, failed ones included.
    var passes: Int {
        store.transactions.withLock { $0.filter(\.claims).count }
    }

    /// When the dispatcher's timer runs the next pass; nil if none is planned.
    var plannedPass: Int64? { scheduler.queue.sync { scheduler.dispatcher.plannedPassAt } }

    /// Starts a stored job's attempt without a pass: claimed in the store, then its slot reserved
    /// and its transfer started by the attempt runner, from the partial data it has. `adjust`
    /// changes the job as the attempt sees it.
    func begin(_ id: String, _ adjust: (inout Download) -> Void = { _ in }) throws {
        var job = try fixture.claim(id)
        adjust(&job)
        let now = clock.now
        let partialBytes = fixture.partials.size(id)
        scheduler.queue.sync {
            _ = scheduler.attempts.reserve(job, now: now, partialBytes: partialBytes, discretionary: false)
            scheduler.attempts.start(job, resumeFrom: partialBytes)
        }
    }

    func job(_ id: String) throws -> Download {
        try fixture.job(id)
    }

    func states(_ ids: [String]) throws -> [DownloadState] {
        try ids.map { try fixture.job($0).state }
    }

    /// How each of the job's attempts ended, as `GET /downloads/{id}/attempts` lists them.
    func outcomes(_ id: String) throws -> [String] {
        try fixture.store.attempts(of: id).map(\.outcome)
    }

    func waitingFor(_ id: String) throws -> WaitingFor? {
        scheduler.waitingFor(try fixture.job(id), load: scheduler.loadSnapshot(), now: clock.now)
    }

    /// Changes a job as a client's PATCH does: in the store first, then the scheduler is told.
    func patch(_ id: String, restart: Bool, _ change: (inout Download) -> Void) throws {
        let current = try job(id)
        var changed = current
        change(&changed)
        let stored = try #require(try fixture.store.change(changed, expectingRevision: current.revision))
        scheduler.changed(stored, restart: restart)
    }

    /// Moves a job to `state` as a client's cancel or pause does: in the store first, then its
    /// transfer is stopped.
    func stop(_ id: String, as state: DownloadState, reason: StopReason) throws {
        var stopped = try job(id)
        stopped.state = state
        #expect(try fixture.store.apply([.update(stopped, expecting: [.queued, .running])]) == [true])
        scheduler.stop(id, reason: reason)
    }

    /// Queues a paused job again as a client's resume does, then runs a pass.
    func resume(_ id: String) throws {
        var queued = try job(id)
        queued.state = .queued
        queued.runAt = clock.now
        #expect(try fixture.store.apply([.update(queued, expecting: [.paused])]) == [true])
        pass()
    }

    /// Shuts the scheduler down, expecting it to have waited for every attempt's end to be saved
    /// rather than given up at its timeout (which a passing test never waits out).
    func stop() async {
        await scheduler.shutdown(timeout: .seconds(30))
        #expect(scheduler.queue.sync { scheduler.attempts.active.isEmpty })
    }
}
