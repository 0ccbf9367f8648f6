import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
import Transfer

/// Nothing an attempt produced is lost: a batch the store or the file system did not take is
/// written again, before anything newer, until it is saved; and while shutting down, turns write
/// but claim nothing.
@Suite struct CompleterFailureTests {
    @Test func aFailedCommitIsWrittenAgainBeforeNewerWrites() throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1")
        bench.store.jobWritesFail.store(true, ordering: .sequentiallyConsistent)
        bench.add(bench.progress("j1", 10))
        bench.turn()
        #expect(try bench.bytes("j1") == 0)
        #expect(bench.log.withLock { $0 }.isEmpty)

        bench.store.jobWritesFail.store(false, ordering: .sequentiallyConsistent)
        bench.add(bench.progress("j1", 20))
        bench.turn()
        #expect(bench.log.withLock { $0 } == ["j1 10 [true]", "j1 20 [true]"])
        #expect(try bench.bytes("j1") == 20)
    }

    @Test func aFailedCommitIsWrittenAgainByItself() async throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1")
        bench.store.jobWritesFail.store(true, ordering: .sequentiallyConsistent)
        bench.add(bench.progress("j1", 10))
        bench.turn()

        bench.store.jobWritesFail.store(false, ordering: .sequentiallyConsistent)
        #expect(await eventually { (try? bench.bytes("j1")) == 10 })
        #expect(bench.log.withLock { $0 } == ["j1 10 [true]"])
    }

    /// A completion the store did not take leaves the job running with its partial data, and no
    /// webhook or event says otherwise, until it is saved.
    @Test func aCompletionIsAnnouncedOnlyOnceSaved() throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1", "j2")
        let completion = try bench.completion("j1")
        bench.store.jobWritesFail.store(true, ordering: .sequentiallyConsistent)
        bench.add(completion)
        bench.turn()
        #expect(try bench.state("j1") == .running)
        #expect(bench.fixture.partialExists("j1"))
        #expect(try bench.fixture.webhooksDue().isEmpty)
        #expect(bench.fixture.published.withLock { $0 }.isEmpty)

        bench.store.jobWritesFail.store(false, ordering: .sequentiallyConsistent)
        bench.add(bench.progress("j2", 20))
        bench.turn()
        #expect(try bench.state("j1") == .completed)
        #expect(!bench.fixture.partialExists("j1"))
        #expect(try bench.fixture.webhooksDue().contains("download.completed"))
        #expect(bench.fixture.published.withLock { $0.map(\.state) } == [.completed])
    }

    /// A turn whose pass failed (the store failed in it) keeps its writes for the next turn.
    @Test func aFailedPassKeepsTheTurnsWrites() throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1", "j2")
        bench.store.jobWritesFail.store(true, ordering: .sequentiallyConsistent)
        bench.onQueue {
            bench.completer.add(bench.progress("j1", 10))
            bench.completer.attemptEnded()
        }
        bench.turn()
        #expect(try bench.bytes("j1") == 0)

        bench.store.jobWritesFail.store(false, ordering: .sequentiallyConsistent)
        bench.add(bench.progress("j2", 20))
        bench.turn()
        #expect(bench.store.transactions.withLock { $0.first } == .applyAndClaim(changes: 1))
        #expect(try ["j1", "j2"].map(bench.bytes) == [10, 20])
    }

    /// A finished file's name that could not be made durable holds its completion back, like a
    /// write the store refused: the job stays running, its partial file stays, and the whole batch
    /// is tried again.
    @Test func aDirectorySyncFailureKeepsTheBatch() throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1", "j2")
        bench.syncsFail.store(true, ordering: .sequentiallyConsistent)
        bench.add(try bench.completion("j1"), bench.progress("j2", 20))
        bench.turn()
        #expect(bench.store.transactions.withLock { $0 }.isEmpty)
        #expect(try bench.state("j1") == .running)
        #expect(try bench.bytes("j2") == 0)
        #expect(bench.fixture.partialExists("j1"))

        bench.syncsFail.store(false, ordering: .sequentiallyConsistent)
        bench.add(bench.progress("j2", 30))
        bench.turn()
        #expect(try bench.state("j1") == .completed)
        #expect(try bench.bytes("j2") == 30)
    }

    /// The pass a freed slot asked for waits with the batch whose sync failed, and runs with it.
    @Test func aDirectorySyncFailureHoldsTheTurnsPassBack() throws {
        let bench = try CompleterUnderTest()
        try bench.running("j1", "j2")
        try bench.fixture.submit("next")
        bench.syncsFail.store(true, ordering: .sequentiallyConsistent)
        let completion = try bench.completion("j1")
        bench.onQueue {
            bench.completer.add(completion)
            bench.completer.wantPass()
        }
        bench.turn()
        #expect(bench.store.transactions.withLock { $0 }.isEmpty)
        #expect(try bench.state("next") == .queued)

        bench.syncsFail.store(false, ordering: .sequentiallyConsistent)
        bench.add(bench.progress("j2", 20))
        bench.turn()
        #expect(try ["j1", "next"].map(bench.state) == [.completed, .running])
    }
}
