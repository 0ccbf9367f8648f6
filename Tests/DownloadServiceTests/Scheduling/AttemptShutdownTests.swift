import Dispatch
import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
import Transfer

/// Shutting down: every attempt is stopped with its data kept, its job back in the queue, and the
/// shutdown waits for those ends to be saved, no longer than its timeout.
@Suite struct AttemptShutdownTests {
    @Test func shutdownReturnsOnceEveryAttemptsEndIsSaved() async throws {
        let run = try RunningScheduler()
        for id in ["j1", "j2"] {
            try run.fixture.submit(id)
            try run.begin(id)
        }
        try run.fixture.writePartial("j1", Array(repeating: 1, count: 10))

        await run.stop()

        #expect(Set(run.transfers.cancelled.map(\.jobID)) == ["j1", "j2"])
        #expect(try run.states(["j1", "j2"]) == [.queued, .queued])
        #expect(try run.outcomes("j1") == ["interrupted"])
        #expect(try run.job("j1").bytesReceived == 10)
        #expect(run.fixture.partialExists("j1"))
        #expect(run.scheduler.runningTransfers == 0)
    }

    /// An attempt whose body is in and which settles behind its freed slot is stopped and saved too.
    @Test func shutdownWaitsForAnAttemptSettlingBehindItsSlot() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        try run.begin("j1")
        run.transfers.progress("j1", TransferProgress(bytesOnDisk: 4, bytesExpected: 4, bodyComplete: true))
        #expect(await eventually { run.scheduler.runningTransfers == 0 })

        await run.stop()
        #expect(try run.outcomes("j1") == ["interrupted"])
        #expect(try run.job("j1").state == .queued)
    }

    /// A store that cannot take the attempts' ends holds shutdown no longer than its timeout; the
    /// ends are saved once the store takes them again.
    @Test func aShutdownWhoseSavesFailEndsAtItsTimeout() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        try run.begin("j1")
        let store = run.store
        store.jobWritesFail.store(true, ordering: .sequentiallyConsistent)
        // Should shutdown not keep its timeout, it waits until the store takes writes again a
        // minute later, and the expectations below fail rather than the test hanging.
        DispatchQueue.global().asyncAfter(deadline: .now() + 60) { store.jobWritesFail.store(false, ordering: .sequentiallyConsistent) }

        await run.scheduler.shutdown(timeout: .milliseconds(50))
        #expect(run.transfers.cancelled.map(\.jobID) == ["j1"])
        #expect(try run.job("j1").state == .running)
        #expect(try run.outcomes("j1").isEmpty)

        store.jobWritesFail.store(false, ordering: .sequentiallyConsistent)
        #expect(await eventually { (try? run.job("j1").state) == .queued })
        #expect(try run.outcomes("j1") == ["interrupted"])
    }
}
