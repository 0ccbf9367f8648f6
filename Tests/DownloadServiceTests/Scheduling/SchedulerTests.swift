import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
import Transfer

/// Scheduling passes over a real store with a fake engine: which attempts start, in which order,
/// what a client then reads, and that an attempt ending frees its slot for the next job.
@Suite struct SchedulerTests {
    @Test func priorityFirstThenSessionsTakeTurns() async throws {
        let run = try RunningScheduler(["max-transfers": "3"])
        for id in ["j1", "j2", "j3"] { try run.fixture.submit(id, session: "bulk") }
        try run.fixture.submit("j4", session: "single")
        try run.fixture.submit("j5", session: "bulk", priority: 0.9)

        run.pass()

        // j4 came after all of bulk's jobs but takes its turn before bulk's second.
        #expect(run.transfers.jobIDs == ["j5", "j1", "j4"])
        #expect(run.transfers.all.map(\.partialPath) == ["j5", "j1", "j4"].map(run.fixture.partials.path))
        #expect(try run.states(["j1", "j2", "j3", "j4", "j5"]) == [.running, .queued, .queued, .running, .running])
        #expect(try run.fixture.job("j5").attempts == 1)
        #expect(try run.waitingFor("j2") == .slot)

        let body = Array("j5's bytes".utf8)
        try run.transfers.succeed("j5", body: body)
        #expect(await eventually { run.transfers.jobIDs.count == 4 })
        #expect(run.transfers.jobIDs.last == "j2")
        // j2's transfer starts during the pass that claims it, before that pass commits (with j5's settlement).
        #expect(await eventually { (try? run.fixture.job("j5").state) == .completed })
        #expect(run.fixture.destinationBytes("files/j5") == body)
        #expect(await eventually { (try? run.states(["j2", "j3"])) == [.running, .queued] })

        // Shutting down stops every transfer and puts its job back in the queue.
        await run.stop()
        #expect(try run.states(["j1", "j2", "j4"]) == [.queued, .queued, .queued])
        #expect(try run.fixture.store.attempts(of: "j1").map(\.outcome) == ["interrupted"])
    }

    /// Once an attempt's body is in, its slot goes to the next job while the file is synced, hashed
    /// and settled; the job itself completes only when the engine reports the attempt done.
    @Test func theSlotIsFreedWhenTheBodyIsIn() async throws {
        let run = try RunningScheduler(["max-transfers": "1"])
        for id in ["j1", "j2"] { try run.fixture.submit(id) }
        run.pass()
        #expect(run.transfers.jobIDs == ["j1"])

        let body = Array("j1's bytes".utf8)
        run.transfers.progress("j1", TransferProgress(bytesOnDisk: Int64(body.count), bytesExpected: Int64(body.count), bodyComplete: true))
        #expect(await eventually { run.transfers.jobIDs == ["j1", "j2"] })
        run.settle()  // j2's transfer starts inside its claim, before the claim commits
        #expect(try run.states(["j1", "j2"]) == [.running, .running])

        try run.transfers.succeed("j1", body: body)
        #expect(await eventually { (try? run.fixture.job("j1").state) == .completed })
        #expect(run.fixture.destinationBytes("files/j1") == body)
        // The completion does not count the freed slot a second time: j2 still holds the only one.
        try run.fixture.submit("j3")
        run.pass()
        #expect(run.transfers.jobIDs == ["j1", "j2"])
        #expect(try run.waitingFor("j3") == .slot)

        await run.stop()
        #expect(try run.states(["j2", "j3"]) == [.queued, .queued])
    }

    /// A pass starts its transfers before its claims commit; a job it chose but did not get (another
    /// node claimed it first) is not this node's: its transfer is stopped, nothing is settled or
    /// recorded for it, its slot is free again, and a later pass that does claim it starts it again.
    @Test func aTransferWhoseClaimIsLostStopsWithoutASettlement() async throws {
        let run = try RunningScheduler(["max-transfers": "1"])
        run.store.claimsLost.store(true, ordering: .sequentiallyConsistent)
        try run.fixture.submit("j1")

        run.pass()
        #expect(run.transfers.jobIDs == ["j1"])
        #expect(await eventually { run.scheduler.runningTransfers == 0 })
        #expect(try run.job("j1").state == .queued)
        #expect(try run.job("j1").attempts == 0)
        #expect(try run.outcomes("j1").isEmpty)

        run.store.claimsLost.store(false, ordering: .sequentiallyConsistent)
        run.pass()
        #expect(run.transfers.jobIDs == ["j1", "j1"])
        #expect(try run.job("j1").state == .running)
        #expect(try run.job("j1").attempts == 1)
        await run.stop()
        #expect(try run.outcomes("j1") == ["interrupted"])
    }

    @Test func aHostGetsNoMoreThanItsLimit() async throws {
        let run = try RunningScheduler(["max-transfers": "10", "max-transfers-per-host": "2"])
        for id in ["j1", "j2", "j3"] { try run.fixture.submit(id, host: "busy.example") }
        try run.fixture.submit("j4", host: "other.example")

        run.pass()

        #expect(run.transfers.jobIDs == ["j1", "j2", "j4"])
        #expect(try run.states(["j1", "j2", "j3", "j4"]) == [.running, .running, .queued, .running])
        #expect(try run.waitingFor("j3") == .hostLimit)

        run.transfers.complete("j1", with: TransferResult(httpStatus: 404))
        #expect(await eventually { run.transfers.jobIDs.count == 4 })
        #expect(run.transfers.jobIDs.last == "j3")
        #expect(await eventually { (try? run.states(["j1", "j3"])) == [.failed, .running] })
        await run.stop()
    }

    @Test func discretionaryJobsGetTheirShareOfSlots() async throws {
        let run = try RunningScheduler(["max-transfers": "4", "discretionary-max-share": "0.5"])
        for id in ["d1", "d2", "d3"] { try run.fixture.submit(id, discretionary: true) }
        try run.fixture.submit("n1")

        run.pass()

        #expect(run.transfers.jobIDs == ["n1", "d1", "d2"])
        #expect(try run.states(["d1", "d2", "d3", "n1"]) == [.running, .running, .queued, .running])
        #expect(try run.waitingFor("d3") == .discretionary)
        await run.stop()
    }

    /// Outside the window only normal jobs start, and discretionary ones that waited their maximum
    /// delay; when the window opens the rest start.
    @Test func discretionaryJobsWaitForTheirWindow() async throws {
        let run = try RunningScheduler(["discretionary-window": "01:00-06:00", "discretionary-max-delay": "24h"])
        try run.fixture.submit("d1", discretionary: true)
        try run.fixture.submit("aged", discretionary: true, createdAt: ServiceFixture.start - 25 * 3_600_000)
        try run.fixture.submit("n1")

        run.pass()  // at 12:00 UTC

        #expect(run.transfers.jobIDs == ["aged", "n1"])
        #expect(try run.fixture.job("d1").state == .queued)
        #expect(try run.waitingFor("d1") == .discretionary)

        run.fixture.clock.advance(by: .seconds(13 * 3600))  // 01:00 UTC
        run.pass()
        #expect(run.transfers.jobIDs == ["aged", "n1", "d1"])
        #expect(try run.fixture.job("d1").state == .running)
        await run.stop()
    }
}
