import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
import Transfer

/// What one pass chooses as the store asks it: per-host limits counted with what other nodes run,
/// host holds and spacing, each choice counting in the load for the next.
@Suite struct PassChoicesTests {
    /// Other nodes sharing the store run jobs of a host: this node starts only what the host has left.
    @Test func aHostsLimitCountsWhatOtherNodesRun() async throws {
        let run = try RunningScheduler(["max-transfers-per-host": "2"])
        let busy = try run.fixture.submit("b1", host: "busy.example").hostKey
        try run.fixture.submit("b2", host: "busy.example")
        let full = try run.fixture.submit("f1", host: "full.example").hostKey
        try run.fixture.submit("o1", host: "other.example")
        run.store.elsewhere.withLock { $0 = [busy: 1, full: 2] }

        run.pass()

        #expect(run.transfers.jobIDs == ["b1", "o1"])
        #expect(try run.states(["b1", "b2", "f1", "o1"]) == [.running, .queued, .queued, .running])
        await run.stop()
    }

    /// What other nodes run is read anew in each pass: once they are done, the host is free here.
    @Test func otherNodesCountsAreThoseOfTheirPass() async throws {
        let run = try RunningScheduler(["max-transfers-per-host": "1"])
        let host = try run.fixture.submit("j1").hostKey
        run.store.elsewhere.withLock { $0 = [host: 1] }
        run.pass()
        #expect(run.transfers.jobIDs.isEmpty)

        run.store.elsewhere.withLock { $0 = [:] }
        run.pass()
        #expect(run.transfers.jobIDs == ["j1"])
        await run.stop()
    }

    /// A job on several connections holds that many of its host's: the host's next job waits.
    @Test func aJobsConnectionsCountAgainstItsHost() async throws {
        let run = try RunningScheduler(["max-transfers-per-host": "3"])
        try run.fixture.submit("wide", connections: 2)
        try run.fixture.submit("one")
        try run.fixture.submit("two")
        run.pass()

        #expect(run.transfers.jobIDs == ["wide", "one"])
        #expect(try run.waitingFor("two") == .hostLimit)
        #expect(run.scheduler.loadSnapshot().running == 2)
        await run.stop()
    }

    /// `host-min-interval` spaces the starts of requests to one host; other hosts are not held.
    @Test func requestsToOneHostAreSpaced() async throws {
        let run = try RunningScheduler(["host-min-interval": "2s"])
        try run.fixture.submit("j1")
        try run.fixture.submit("j2")
        try run.fixture.submit("o1", host: "other.example")
        run.pass()

        #expect(run.transfers.jobIDs == ["j1", "o1"])
        #expect(try run.waitingFor("j2") == .hostLimit)
        #expect(run.plannedPass == run.clock.now + 2000)

        run.clock.advance(by: .seconds(2))
        run.pass()
        #expect(run.transfers.jobIDs == ["j1", "o1", "j2"])
        await run.stop()
    }

    /// Holds a 429 or 503 with Retry-After set before a restart still hold after it: the first
    /// pass reads them from the store.
    @Test func hostHoldsAreRestoredFromTheStoreAtTheFirstPass() async throws {
        let run = try RunningScheduler()
        let held = try run.fixture.submit("j1").hostKey
        try run.fixture.submit("o1", host: "other.example")
        let until = run.clock.now + 30_000
        _ = try run.fixture.store.apply([.holdHost(held, until: until)])

        run.pass()
        #expect(run.transfers.jobIDs == ["o1"])
        #expect(try run.waitingFor("j1") == .hostBackoff)
        #expect(run.scheduler.loadSnapshot().hostBackoffs == [held: until])
        #expect(run.plannedPass == until)

        run.clock.advance(by: .seconds(30))
        run.pass()
        #expect(run.transfers.jobIDs == ["o1", "j1"])
        #expect(run.scheduler.loadSnapshot().hostBackoffs.isEmpty)
        await run.stop()
    }

    /// A 429 with Retry-After holds every job of that host, in the store too, not just the job
    /// that got it; jobs of other hosts start.
    @Test func aRetryAfterHoldsTheWholeHost() async throws {
        let run = try RunningScheduler()
        let host = try run.fixture.submit("j1").hostKey
        run.pass()
        run.transfers.complete("j1", with: TransferResult(httpStatus: 429, retryAfter: 60))
        #expect(await eventually { (try? run.job("j1").state) == .queued })

        try run.fixture.submit("j2")
        try run.fixture.submit("o1", host: "other.example")
        run.pass()
        let until = run.clock.now + 60_000
        #expect(run.transfers.jobIDs == ["j1", "o1"])
        #expect(try run.waitingFor("j2") == .hostBackoff)
        #expect(try run.fixture.store.hostBackoffs(after: run.clock.now) == [host: until])

        run.clock.advance(by: .seconds(60))
        run.pass()
        #expect(run.transfers.jobIDs.contains("j2"))
        #expect(try run.job("j2").state == .running)
        await run.stop()
    }
}
