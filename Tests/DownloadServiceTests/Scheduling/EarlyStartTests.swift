import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
import Transfer

/// A chosen job's transfer starts inside the claim, before it commits; a claim that does not
/// commit stops it again, and after a failed pass the next starts only what it committed.
@Suite struct EarlyStartTests {
    @Test func aTransferStartedInAClaimThatFailsIsStoppedWithoutASettlement() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        run.store.jobWritesFail.store(true, ordering: .sequentiallyConsistent)
        run.pass()

        // Asked of the origin while the pass was choosing, then cancelled when its claim failed.
        #expect(run.transfers.jobIDs == ["j1"])
        #expect(run.transfers.cancelled.map(\.jobID) == ["j1"])
        #expect(await eventually { run.scheduler.runningTransfers == 0 })
        #expect(try run.job("j1").state == .queued)
        #expect(try run.job("j1").attempts == 0)
        #expect(try run.outcomes("j1").isEmpty)
        run.store.jobWritesFail.store(false, ordering: .sequentiallyConsistent)
        await run.stop()
    }

    /// A store that keeps failing costs no request to the origin per retried pass.
    @Test func afterAFailedPassTheNextStartsOnlyWhatItCommitted() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        run.store.jobWritesFail.store(true, ordering: .sequentiallyConsistent)
        run.pass()
        #expect(await eventually { run.scheduler.runningTransfers == 0 })

        run.pass()
        run.pass()
        #expect(run.passes >= 3)  // the retry timer may have run more, which start nothing either
        #expect(run.transfers.jobIDs == ["j1"])
        #expect(await eventually { run.scheduler.runningTransfers == 0 })

        run.store.jobWritesFail.store(false, ordering: .sequentiallyConsistent)
        run.pass()
        #expect(run.transfers.jobIDs == ["j1", "j1"])
        #expect(run.transfers.cancelled.count == 1)
        #expect(try run.job("j1").state == .running)
        #expect(try run.job("j1").attempts == 1)

        // Committed again: the pass after starts its transfers as it chooses them.
        try run.fixture.submit("j2")
        run.store.claimsLost.store(true, ordering: .sequentiallyConsistent)
        run.pass()
        #expect(run.transfers.jobIDs == ["j1", "j1", "j2"])
        run.store.claimsLost.store(false, ordering: .sequentiallyConsistent)
        await run.stop()
    }

    /// A job whose wait for a new URL ran out is claimed only to record that: no request.
    @Test func anExpiredURLIsNotAskedForWhenChosen() throws {
        let fixture = try ServiceFixture()
        var job = try fixture.submit("j1")
        let early = EarlyStart()
        #expect(early.startsWhenChosen(job))
        job.awaitingURLSince = fixture.clock.now
        #expect(!early.startsWhenChosen(job))
    }

    @Test func aFailedPassHoldsStartsUntilAPassCommits() throws {
        let job = try ServiceFixture().submit("j1")
        var early = EarlyStart()
        early.passFailed()
        #expect(!early.startsWhenChosen(job))
        early.passFailed()
        #expect(!early.startsWhenChosen(job))
        early.passCommitted()
        #expect(early.startsWhenChosen(job))
    }
}
