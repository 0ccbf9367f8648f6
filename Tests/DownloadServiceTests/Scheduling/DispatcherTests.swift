import Dispatch
import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
import Transfer

/// When the dispatcher runs a pass and what the pass starts: slots, the timer for the next change
/// of the queue, new jobs, pokes, a store that fails, shutting down.
@Suite struct DispatcherTests {
    private static let minute: Int64 = 60_000

    /// An ended attempt's settlement and the pass that gives its slot to the next job are one transaction.
    @Test func aFreedSlotGoesToTheNextJobInTheSettlementsTransaction() async throws {
        let run = try RunningScheduler(["max-transfers": "2"])
        for id in ["j1", "j2", "j3"] { try run.fixture.submit(id) }
        run.pass()
        #expect(run.transfers.jobIDs == ["j1", "j2"])
        #expect(try run.waitingFor("j3") == .slot)

        run.transfers.complete("j1", with: TransferResult(httpStatus: 404))
        #expect(await eventually { run.transfers.jobIDs == ["j1", "j2", "j3"] })
        run.settle()
        #expect(try run.states(["j1", "j2", "j3"]) == [.failed, .running, .running])
        #expect(run.store.transactions.withLock { $0.last } == .applyAndClaim(changes: 1))
        await run.stop()
    }

    @Test func anEarliestBeginDatePlansThePassThatStartsTheJob() async throws {
        let run = try RunningScheduler()
        let begin = run.clock.now + Self.minute
        try run.fixture.submit("later") { $0.earliestBeginDate = begin }
        run.pass()
        #expect(run.transfers.jobIDs.isEmpty)
        #expect(try run.waitingFor("later") == .earliestBeginDate)
        #expect(run.plannedPass == begin)

        run.clock.advance(by: .seconds(59))
        run.pass()
        #expect(run.transfers.jobIDs.isEmpty)
        #expect(run.plannedPass == begin)

        run.clock.advance(by: .seconds(1))
        run.pass()
        #expect(run.transfers.jobIDs == ["later"])
        #expect(try run.job("later").state == .running)
        #expect(run.plannedPass == nil)
        await run.stop()
    }

    /// The planned pass runs by itself: nothing but the timer starts the job.
    @Test func thePlannedPassRunsWhenItsTimeComes() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("soon") { $0.earliestBeginDate = run.clock.now + 20 }
        run.pass()
        #expect(run.transfers.jobIDs.isEmpty)

        run.clock.advance(by: .milliseconds(20))
        #expect(await eventually { run.transfers.jobIDs == ["soon"] })
        #expect(await eventually { (try? run.job("soon").state) == .running })
        await run.stop()
    }

    /// A burst of far-future submissions costs no pass; one due before the planned pass gets one.
    @Test func aStoredJobWakesAPassOnlyWhenDueBeforeThePlannedOne() async throws {
        let run = try RunningScheduler()
        let now = run.clock.now
        try run.fixture.submit("planned") { $0.earliestBeginDate = now + 2 * Self.minute }
        run.pass()
        #expect(run.plannedPass == now + 2 * Self.minute)

        let far = try run.fixture.submit("far") { $0.earliestBeginDate = now + 3 * Self.minute }
        run.scheduler.jobStored(runAt: far.runAt)
        run.settle()
        #expect(run.passes == 1)

        let soon = try run.fixture.submit("soon") { $0.earliestBeginDate = now + Self.minute }
        run.scheduler.jobStored(runAt: soon.runAt)
        #expect(await eventually { run.plannedPass == now + Self.minute })
        #expect(run.passes == 2)
        await run.stop()
    }

    @Test func aJobStoredWhileNoPassIsPlannedStartsAtOnce() async throws {
        let run = try RunningScheduler()
        run.pass()
        #expect(run.plannedPass == nil)

        let job = try run.fixture.submit("j1")
        run.scheduler.jobStored(runAt: job.runAt)
        #expect(await eventually { run.transfers.jobIDs == ["j1"] })
        #expect(await eventually { (try? run.job("j1").state) == .running })
        await run.stop()
    }

    @Test func pokesWhileAPassWaitsMakeOnePass() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        let busy = DispatchSemaphore(value: 0)
        run.scheduler.queue.async { busy.wait() }
        for _ in 0..<10 { run.scheduler.poke() }
        busy.signal()
        run.settle()

        #expect(run.passes == 1)
        #expect(run.transfers.jobIDs == ["j1"])
        await run.stop()
    }

    /// The store cannot be written: the pass claims nothing, and the dispatcher plans the next
    /// a second later, which starts the job once the store takes writes again.
    @Test func aFailedPassPlansAnotherASecondLater() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        run.store.jobWritesFail.store(true, ordering: .sequentiallyConsistent)
        run.pass()
        #expect(try run.job("j1").state == .queued)
        #expect(try run.job("j1").attempts == 0)
        #expect(run.plannedPass == run.clock.now + Dispatcher.storeRetryInterval)

        run.store.jobWritesFail.store(false, ordering: .sequentiallyConsistent)
        run.clock.advance(by: .seconds(1))
        run.pass()
        #expect(try run.job("j1").state == .running)
        #expect(try run.job("j1").attempts == 1)
        await run.stop()
    }

    /// A job that needs more space than there is waits, and space is looked at again soon.
    @Test func aJobThatDoesNotFitWaitsForDiskSpace() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("huge") { $0.expectedBytesToReceive = 1 << 60 }
        try run.fixture.submit("small") { $0.expectedBytesToReceive = 1000 }
        run.pass()

        #expect(run.transfers.jobIDs == ["small"])
        #expect(try run.waitingFor("huge") == .diskSpace)
        #expect(run.plannedPass == run.clock.now + Dispatcher.diskRecheckInterval)
        await run.stop()
    }

    @Test func aClosedDiscretionaryWindowPlansAPassForItsOpening() async throws {
        let run = try RunningScheduler(["discretionary-window": "01:00-06:00"])
        try run.fixture.submit("d1", discretionary: true)
        run.pass()  // at 12:00 UTC

        #expect(run.transfers.jobIDs.isEmpty)
        #expect(run.plannedPass == ServiceFixture.start + 13 * 60 * Self.minute)
        await run.stop()
    }

    @Test func theLoadSnapshotShowsWhatRuns() async throws {
        let run = try RunningScheduler()
        let host = try run.fixture.submit("j1") { $0.expectedBytesToReceive = 1000 }.hostKey
        try run.fixture.submit("j2") { $0.expectedBytesToReceive = 500 }
        try run.fixture.submit("d1", host: "other.example", discretionary: true)
        run.pass()

        let load = run.scheduler.loadSnapshot()
        #expect(load.running == 3)
        #expect(load.runningByHost[host] == 2)
        #expect(load.runningDiscretionary == 1)
        #expect(load.reservedDiskBytes == 1500)
        #expect(load.freeDiskBytes != nil)
        await run.stop()
        #expect(run.scheduler.loadSnapshot().running == 0)
    }

    @Test func noPassRunsOnceShuttingDown() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("later") { $0.earliestBeginDate = run.clock.now + Self.minute }
        run.pass()
        #expect(run.plannedPass != nil)

        await run.stop()
        #expect(run.plannedPass == nil)
        try run.fixture.submit("j1")
        run.scheduler.poke()
        run.settle()
        #expect(run.transfers.jobIDs.isEmpty)
        #expect(try run.job("j1").state == .queued)
    }
}
