import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
import Transfer

/// `waitingFor` as a client reads it: why each queued job did not start in the pass, by the rule
/// the pass followed, and nothing for a job that is not queued.
@Suite struct WaitingForTests {
    @Test func eachReasonAPassLeftAJobQueuedIsShown() async throws {
        let run = try RunningScheduler(["max-transfers-per-host": "1", "discretionary-window": "01:00-06:00"])
        try run.fixture.submit("run", host: "a.example")
        try run.fixture.submit("limited", host: "a.example")
        try run.fixture.submit("later", host: "b.example") { $0.earliestBeginDate = run.clock.now + 3_600_000 }
        try run.fixture.submit("disc", host: "c.example", discretionary: true)
        try run.fixture.submit("huge", host: "d.example") { $0.expectedBytesToReceive = 1 << 60 }
        var paused = try run.fixture.submit("paused", host: "e.example")
        paused.state = .paused
        #expect(try run.fixture.store.apply([.update(paused, expecting: [.queued])]) == [true])

        run.pass()

        #expect(run.transfers.jobIDs == ["run"])
        let shown = try ["run", "limited", "later", "disc", "huge", "paused"].map(run.waitingFor)
        #expect(shown == [nil, .hostLimit, .earliestBeginDate, .discretionary, .diskSpace, nil])
        await run.stop()
    }

    /// What an attempt's end leaves a job waiting for: its retry, a new URL, or its host's hold.
    @Test func whatAnAttemptsEndLeavesAJobWaitingForIsShown() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("retried", host: "r.example")
        try run.fixture.submit("expired", host: "u.example") { $0.urlRefresh = true }
        try run.fixture.submit("held", host: "h.example")
        for id in ["retried", "expired", "held"] { try run.begin(id) }

        run.transfers.complete("retried", with: TransferResult(httpStatus: 503))
        run.transfers.complete("expired", with: TransferResult(httpStatus: 403))
        run.transfers.complete("held", with: TransferResult(httpStatus: 429, retryAfter: 60))
        #expect(await eventually { (try? run.states(["retried", "expired", "held"])) == [.queued, .queued, .queued] })
        try run.fixture.submit("sameHost", host: "h.example")
        run.pass()

        #expect(run.transfers.jobIDs == ["retried", "expired", "held"])
        let shown = try ["retried", "expired", "held", "sameHost"].map(run.waitingFor)
        #expect(shown == [.retry, .url, .retry, .hostBackoff])
        await run.stop()
    }
}
