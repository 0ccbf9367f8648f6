import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
import Transfer

/// A running attempt whose job changes under it: a client's PATCH, data that does not fit the
/// URL, a claim that did not commit, a wait for a new URL that runs out.
@Suite struct AttemptChangeTests {
    /// A new URL stops the attempt; the job goes on from its partial data with the new request and If-Range.
    @Test func aPatchWithANewURLStopsAndResumesWithIt() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        try run.begin("j1")
        try run.fixture.writePartial("j1", Array(repeating: 1, count: 10))
        run.transfers.progress("j1", TransferProgress(bytesOnDisk: 10, bytesExpected: 100, validator: "\"v1\""))
        // The validator is saved (a new revision) before the client's PATCH reads the job's revision.
        run.settle()
        #expect(try run.job("j1").validator == "\"v1\"")

        try run.patch("j1", restart: true) { $0.url = "http://origin.example/moved/j1" }

        #expect(await eventually { run.transfers.all.count == 2 })
        #expect(run.transfers.cancelled.map(\.request.url) == ["http://origin.example/j1"])
        let resumed = try #require(run.transfers.all.last).request
        #expect(resumed.url == "http://origin.example/moved/j1")
        guard case .file(_, let validator) = resumed.sink else { Issue.record("not a file sink"); return }
        #expect(validator == "\"v1\"")
        run.settle()
        #expect(try run.outcomes("j1") == ["changed"])
        #expect(try run.job("j1").state == .running)
        #expect(try run.job("j1").attempts == 2)
        await run.stop()
    }

    /// A change of order or timing leaves the transfer running; its settlement carries the change
    /// (here, where the job's webhook goes).
    @Test func aPatchWithoutANewRequestKeepsTheTransfer() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1") { $0.webhookURL = "http://hooks.example/old" }
        try run.begin("j1")

        try run.patch("j1", restart: false) {
            $0.webhookURL = "http://hooks.example/new"
            $0.priority = 0.9
        }
        run.settle()
        #expect(run.transfers.cancelled.isEmpty)

        try run.transfers.succeed("j1", body: Array("j1's bytes".utf8))
        #expect(await eventually { (try? run.job("j1").state) == .completed })
        let hooks = try run.fixture.store.dueDeliveries(now: run.clock.now, limit: 10, excluding: [])
            .filter { $0.type == "download.completed" }.map(\.url).sorted()
        #expect(hooks == [ServiceFixture.webhookURL, "http://hooks.example/new"])
        #expect(run.transfers.jobIDs == ["j1"])
        await run.stop()
    }

    /// Data carried over from another URL whose size turns out different is dropped: the job
    /// starts over from byte zero, without a validator.
    @Test func dataOfAnotherSizeStartsOver() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        try run.fixture.writePartial("j1", Array(repeating: 1, count: 10))
        try run.begin("j1") {
            $0.validator = ""
            $0.bytesExpectedFromOrigin = 1000
            $0.bytesReceived = 10
        }

        run.transfers.progress("j1", TransferProgress(bytesOnDisk: 10, bytesExpected: 2000))

        #expect(await eventually { run.transfers.all.count == 2 })
        #expect(run.transfers.cancelled.count == 1)
        guard case .file(_, let validator) = try #require(run.transfers.all.last).request.sink else {
            Issue.record("not a file sink")
            return
        }
        #expect(validator == nil)
        #expect(!run.fixture.partialExists("j1"))
        run.settle()
        #expect(try run.outcomes("j1") == ["changed"])
        #expect(try run.job("j1").bytesReceived == 0)
        await run.stop()
    }

    /// A slot reserved in a pass whose claim failed, before its transfer started, is free at once.
    @Test func anAbandonedReservationIsReleasedAtOnce() async throws {
        let run = try RunningScheduler()
        let job = try run.fixture.submit("j1").startingAttempt(now: run.clock.now)
        run.scheduler.queue.sync {
            _ = run.scheduler.attempts.reserve(job, now: run.clock.now, partialBytes: 0, discretionary: false)
            run.scheduler.attempts.abandon("j1")
        }
        #expect(run.scheduler.runningTransfers == 0)
        #expect(run.transfers.all.isEmpty)
        #expect(try run.job("j1").state == .queued)
        await run.stop()
    }

    /// A transfer whose claim failed holds its slot until it has stopped, so that no second
    /// transfer writes into its partial file meanwhile, and then ends without a settlement.
    @Test func anAbandonedTransferHoldsItsSlotUntilItEnds() async throws {
        let run = try RunningScheduler()
        let job = try run.fixture.submit("j1").startingAttempt(now: run.clock.now)
        let held = run.scheduler.queue.sync {
            _ = run.scheduler.attempts.reserve(job, now: run.clock.now, partialBytes: 0, discretionary: false)
            run.scheduler.attempts.start(job, resumeFrom: 0)
            run.scheduler.attempts.abandon("j1")
            run.scheduler.attempts.stop("j1", reason: .pause)
            return run.scheduler.runningTransfers
        }
        #expect(held == 1)
        run.settle()
        #expect(run.scheduler.runningTransfers == 0)
        #expect(run.transfers.cancelled.count == 1)
        #expect(try run.outcomes("j1").isEmpty)
        #expect(try run.job("j1").state == .queued)
        await run.stop()
    }

    /// No new URL came in time: the job fails with `url_expired` without asking the origin again,
    /// keeping its partial data for a retry.
    @Test func aWaitForANewURLThatRunsOutFailsTheJob() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1") { $0.urlRefresh = true }
        try run.begin("j1")
        try run.fixture.writePartial("j1", Array(repeating: 1, count: 10))
        run.transfers.complete("j1", with: TransferResult(httpStatus: 403, bytesOnDisk: 10))
        #expect(await eventually { (try? run.waitingFor("j1")) == .url })
        #expect(try run.fixture.webhooksDue() == ["download.url_expired"])

        run.clock.advance(by: .seconds(86400))
        run.pass()
        run.settle()
        let failed = try run.job("j1")
        #expect(failed.state == .failed && failed.error?.code == ErrorCode.urlExpired)
        #expect(failed.bytesReceived == 10 && run.fixture.partialExists("j1"))
        #expect(run.transfers.jobIDs == ["j1"])
        #expect(try run.fixture.webhooksDue().contains("download.failed"))
        #expect(run.scheduler.runningTransfers == 0)
        await run.stop()
    }
}
