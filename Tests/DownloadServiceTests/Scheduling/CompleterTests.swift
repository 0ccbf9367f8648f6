import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import Transfer

/// What attempts produce is committed at the queue's next turn, all of it in one transaction,
/// with a scheduling pass in that transaction when an attempt ended or a slot was freed.
@Suite struct CompleterTests {
    @Test func writesAddedInOneTurnCommitInOneTransaction() throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1", "j2", "j3")
        bench.add(bench.progress("j1", 10), bench.progress("j2", 20), bench.progress("j3", 30))
        bench.turn()

        #expect(bench.store.transactions.withLock { $0 } == [.apply(changes: 3)])
        #expect(try ["j1", "j2", "j3"].map(bench.bytes) == [10, 20, 30])
    }

    /// Writes wait for the turn: while the queue is busy, more of them gather into the same transaction.
    @Test func writesWaitForTheQueuesNextTurn() throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1")
        var during: Int64 = -1
        bench.onQueue {
            bench.completer.add(bench.progress("j1", 10))
            during = (try? bench.bytes("j1")) ?? -1
            bench.completer.add(bench.progress("j1", 20))
        }
        bench.turn()

        #expect(during == 0)
        #expect(try bench.bytes("j1") == 20)
        #expect(bench.store.transactions.withLock { $0 } == [.apply(changes: 2)])
    }

    /// Each write learns the results of its own changes, in order, after the commit.
    @Test func eachWriteLearnsItsOwnResults() throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1")
        var stale = try bench.fixture.submit("queued")
        stale.state = .completed
        let refused = bench.logged("queued", JobWrite(changes: [.update(stale, expecting: [.running])]))
        bench.add(bench.progress("j1", 10), refused, bench.progress("j1", 20))
        bench.turn()

        #expect(bench.log.withLock { $0 } == ["j1 10 [true]", "queued [false]", "j1 20 [true]"])
        #expect(try bench.state("queued") == .queued)
    }

    @Test func aTurnWithoutAnEndedAttemptRunsNoPass() throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1")
        try bench.fixture.submit("next")
        bench.add(bench.progress("j1", 10))
        bench.turn()

        #expect(bench.store.transactions.withLock { $0 } == [.apply(changes: 1)])
        #expect(try bench.state("next") == .queued)
    }

    /// An ended attempt may have put its job back in the queue or freed a slot: the turn claims
    /// in the same transaction as it writes.
    @Test func anEndedAttemptRunsAPassInTheSameTransaction() throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1")
        try bench.fixture.submit("next")
        bench.onQueue {
            bench.completer.add(bench.progress("j1", 10))
            bench.completer.attemptEnded()
        }
        bench.turn()

        #expect(bench.store.transactions.withLock { $0 } == [.applyAndClaim(changes: 1)])
        #expect(bench.claimed.withLock { $0 } == [["next"]])
        #expect(try bench.state("next") == .running)
        #expect(try bench.bytes("j1") == 10)
    }

    /// A body that came in frees its slot before its own settlement: the next turn claims for it,
    /// even with nothing to write.
    @Test func aFreedSlotRunsAPassWithNothingToWrite() throws {
        let bench = try CompleterUnderTest()
        try bench.fixture.submit("next")
        bench.onQueue { bench.completer.wantPass() }
        bench.turn()

        #expect(bench.store.transactions.withLock { $0 } == [.claim])
        #expect(try bench.state("next") == .running)
    }

    /// A pass asked for now takes the writes waiting for the next turn into its transaction; that
    /// turn then finds nothing left to do.
    @Test func aPassNowTakesTheWaitingWritesAlong() throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1")
        bench.onQueue {
            bench.completer.add(bench.progress("j1", 10))
            bench.completer.commitWithPass()
        }
        bench.turn()

        #expect(bench.store.transactions.withLock { $0 } == [.applyAndClaim(changes: 1)])
        #expect(try bench.bytes("j1") == 10)
    }

    /// A job settled and claimed again in one turn is announced back in the queue before the pass
    /// that claimed it goes on.
    @Test func aTurnsWritesAreAnnouncedBeforeItsPassGoesOn() throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1")
        let job = try bench.fixture.job("j1")
        let stopped = Settlement(context: bench.fixture.settlementContext(), job: job, result: TransferResult(failure: .cancelled),
                                 startedAt: job.startedAt ?? 0, now: bench.fixture.clock.now, jitter: 0).stopped(.requestChanged)
        bench.onQueue {
            bench.completer.add(bench.logged("j1", stopped))
            bench.completer.attemptEnded()
        }
        bench.turn()

        #expect(bench.log.withLock { $0 } == ["j1 [true]", "pass"])
        #expect(bench.claimed.withLock { $0 } == [["j1"]])
        #expect(bench.fixture.published.withLock { $0.map(\.state) } == [.queued])
        #expect(try bench.fixture.job("j1").attempts == 2)
    }
}
