import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import Transfer

/// While shutting down, turns still write what attempts produce but claim nothing, and tell the
/// shutdown each time an attempt's end is saved.
@Suite struct CompleterStoppingTests {
    /// A completer that stops, with j1 running and another job queued.
    func stopping() throws -> CompleterUnderTest {
        let bench = try CompleterUnderTest()
        try bench.running("j1")
        try bench.fixture.submit("next")
        bench.onQueue { bench.completer.stop() }
        return bench
    }

    func attemptEnded(_ bench: CompleterUnderTest) {
        bench.onQueue {
            bench.completer.add(bench.progress("j1", 10))
            bench.completer.attemptEnded()
        }
        bench.turn()
    }

    @Test func noPassRunsWhileStopping() throws {
        let bench = try stopping()
        attemptEnded(bench)
        bench.onQueue { bench.completer.commitWithPass() }

        #expect(bench.store.transactions.withLock { $0 } == [.apply(changes: 1)])
        #expect(try bench.state("next") == .queued)
        #expect(bench.savedWhileStopping.load(ordering: .sequentiallyConsistent) == 1)
    }

    /// Shutdown is told only once the end is saved.
    @Test func anEndIsReportedOnceSaved() throws {
        let bench = try stopping()
        bench.store.jobWritesFail.store(true, ordering: .sequentiallyConsistent)
        attemptEnded(bench)
        #expect(bench.savedWhileStopping.load(ordering: .sequentiallyConsistent) == 0)

        bench.store.jobWritesFail.store(false, ordering: .sequentiallyConsistent)
        bench.add(bench.progress("j1", 20))
        bench.turn()
        #expect(bench.savedWhileStopping.load(ordering: .sequentiallyConsistent) == 1)
        #expect(try bench.bytes("j1") == 20)
    }

    /// Progress alone is no attempt's end: shutdown is not told.
    @Test func progressAloneIsNotReported() throws {
        let bench = try stopping()
        bench.add(bench.progress("j1", 10))
        bench.turn()

        #expect(try bench.bytes("j1") == 10)
        #expect(bench.savedWhileStopping.load(ordering: .sequentiallyConsistent) == 0)
    }
}
