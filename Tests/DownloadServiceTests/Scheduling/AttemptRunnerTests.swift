import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
import Transfer

/// An attempt as the runner runs it: the request it makes, its progress as clients read it and as
/// the store keeps it, its slot, and how its end is settled.
@Suite struct AttemptRunnerTests {
    @Test func anAttemptAsksForTheJobsURLIntoItsPartialFile() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1") { $0.maxBytesPerSecond = 4096 }
        try run.begin("j1")

        let request = try #require(run.transfers.all.first?.request)
        #expect(request.url == "http://origin.example/j1")
        guard case .file(let path, let validator) = request.sink else { Issue.record("not a file sink"); return }
        #expect(path == run.fixture.partials.path("j1") && validator == nil)
        #expect(request.firstPartLength == nil && request.maxSpeedBytesPerSecond == 4096)
        #expect(run.scheduler.startedJobIDs() == ["j1"])
        await run.stop()
    }

    /// Partial data and its validator: the attempt goes on from them with If-Range.
    @Test func anAttemptResumesFromItsPartialData() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        try run.fixture.writePartial("j1", Array(repeating: 1, count: 10))
        try run.begin("j1") { $0.validator = "\"v1\"" }

        guard case .file(_, let validator) = try #require(run.transfers.all.first).request.sink else {
            Issue.record("not a file sink")
            return
        }
        #expect(validator == "\"v1\"")
        await run.stop()
    }

    @Test func progressIsSavedAtMostOnceASecond() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        try run.begin("j1")

        run.transfers.progress("j1", TransferProgress(bytesOnDisk: 100, bytesExpected: 1000))
        run.settle()
        #expect(run.scheduler.liveBytes(of: "j1") == 100)
        #expect(try run.job("j1").bytesReceived == 0)

        run.clock.advance(by: .milliseconds(999))
        run.transfers.progress("j1", TransferProgress(bytesOnDisk: 200, bytesExpected: 1000))
        run.settle()
        #expect(run.scheduler.liveProgress()["j1"]?.bytesReceived == 200)
        #expect(try run.job("j1").bytesReceived == 0)

        run.clock.advance(by: .milliseconds(1))
        run.transfers.progress("j1", TransferProgress(bytesOnDisk: 300, bytesExpected: 1000))
        run.settle()
        #expect(try run.job("j1").bytesReceived == 300)
        #expect(try run.job("j1").bytesExpected == 1000)
        await run.stop()
    }

    /// A crash from the moment a validator is seen must resume with it: it is saved at once.
    @Test func aNewValidatorIsSavedAtOnce() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        try run.begin("j1")

        run.transfers.progress("j1", TransferProgress(bytesOnDisk: 10, bytesExpected: 1000, validator: "\"v1\""))
        run.settle()
        #expect(try run.job("j1").validator == "\"v1\"")
        #expect(try run.job("j1").bytesReceived == 10)

        run.transfers.progress("j1", TransferProgress(bytesOnDisk: 20, bytesExpected: 1000, validator: "\"v1\""))
        run.settle()
        #expect(try run.job("j1").bytesReceived == 10)
        await run.stop()
    }

    /// The slot was passed on when the body was in; an end that then fails does not give it back twice.
    @Test func aFreedSlotIsCountedOutOnce() async throws {
        let run = try RunningScheduler(["max-transfers": "1"])
        try run.fixture.submit("j1", expectedSHA256: String(repeating: "0", count: 64))
        try run.begin("j1")
        #expect(run.scheduler.runningTransfers == 1)

        run.transfers.progress("j1", TransferProgress(bytesOnDisk: 4, bytesExpected: 4, bodyComplete: true))
        #expect(await eventually { run.scheduler.runningTransfers == 0 })
        #expect(try run.job("j1").state == .running)

        try run.transfers.succeed("j1", body: Array("body".utf8))
        #expect(await eventually { (try? run.job("j1").state) == .failed })
        #expect(try run.job("j1").error?.code == ErrorCode.checksumMismatch)
        #expect(run.scheduler.runningTransfers == 0)
        #expect(run.scheduler.loadSnapshot().runningByHost.isEmpty)
        await run.stop()
    }

    @Test func aCancelStopsTheTransferAndRemovesItsData() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        try run.begin("j1")
        try run.fixture.writePartial("j1", Array(repeating: 1, count: 10))

        try run.stop("j1", as: .cancelled, reason: .cancel)

        #expect(await eventually { (try? run.outcomes("j1")) == ["cancelled"] })
        #expect(run.transfers.cancelled.map(\.jobID) == ["j1"])
        #expect(try run.job("j1").state == .cancelled)
        #expect(!run.fixture.partialExists("j1"))
        #expect(run.scheduler.runningTransfers == 0)
        await run.stop()
    }

    /// A cancelled job that was not running here still loses its partial data.
    @Test func aCancelOfAJobNotRunningRemovesItsData() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        try run.fixture.writePartial("j1", Array(repeating: 1, count: 10))

        try run.stop("j1", as: .cancelled, reason: .cancel)
        run.settle()
        #expect(!run.fixture.partialExists("j1"))
        #expect(run.transfers.all.isEmpty)
        await run.stop()
    }

    /// A paused job keeps what it got and its validator; resumed, it goes on from there.
    @Test func aPauseKeepsTheDataAndResumesFromIt() async throws {
        let run = try RunningScheduler()
        try run.fixture.submit("j1")
        try run.begin("j1")
        try run.fixture.writePartial("j1", Array(repeating: 1, count: 10))
        run.transfers.progress("j1", TransferProgress(bytesOnDisk: 10, bytesExpected: 100, validator: "\"v1\""))
        // The validator is saved before the client's pause reads the job and writes it back whole.
        run.settle()
        #expect(try run.job("j1").validator == "\"v1\"")

        try run.stop("j1", as: .paused, reason: .pause)
        #expect(await eventually { (try? run.outcomes("j1")) == ["paused"] })
        let paused = try run.job("j1")
        #expect(paused.state == .paused && paused.bytesReceived == 10 && paused.validator == "\"v1\"")
        #expect(run.fixture.partialExists("j1"))

        try run.resume("j1")
        guard case .file(_, let validator) = try #require(run.transfers.all.last).request.sink else {
            Issue.record("not a file sink")
            return
        }
        #expect(run.transfers.jobIDs == ["j1", "j1"])
        #expect(validator == "\"v1\"")
        await run.stop()
    }
}
