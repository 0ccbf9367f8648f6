import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
import Transfer

/// An attempt of a job with a `checksumURL` begins with its digest file: the file is asked for
/// only once the digest file gives its digest, and each way the digest file fails ends the attempt.
@Suite struct AttemptDigestFileTests {
    static let sums = "http://sums.example/SHA256SUMS"
    let body = Array("j1's bytes".utf8)

    /// j1 (into `files/j1`, with mirrors) running, its attempt asking for its digest file.
    func fetchingDigestFile() throws -> RunningScheduler {
        let run = try RunningScheduler()
        try run.fixture.submit("j1") {
            $0.checksumURL = Self.sums
            $0.mirrors = ["http://mirror.example/j1"]
        }
        try run.begin("j1")
        return run
    }

    func answer(_ run: RunningScheduler, _ text: String, status: Int = 200) {
        run.transfers.complete("SHA256SUMS", with: TransferResult(httpStatus: status, responseBody: Array(text.utf8)))
    }

    @Test func theDigestFileIsFetchedBeforeTheFile() async throws {
        let run = try fetchingDigestFile()
        let first = try #require(run.transfers.all.first).request
        #expect(first.url == Self.sums && first.headers.isEmpty)
        guard case .memory = first.sink else { Issue.record("not kept in memory"); return }
        #expect(run.transfers.all.count == 1)

        let digest = try run.fixture.writePartial("j1", body)
        answer(run, "\(String(repeating: "0", count: 64))  other.iso\n\(digest)  j1\n")
        #expect(await eventually { run.transfers.jobIDs == ["SHA256SUMS", "j1"] })
        #expect(run.transfers.all.last?.request.url == "http://origin.example/j1")

        try run.transfers.succeed("j1", body: body)
        #expect(await eventually { (try? run.job("j1").state) == .completed })
        #expect(try run.job("j1").sha256 == digest)
        await run.stop()
    }

    @Test(arguments: [
        (404, "not a digest file"),  // refused for good
        (200, "\(String(repeating: "a", count: 64))  other.iso\n\(String(repeating: "b", count: 64))  more.iso\n"),  // no line for j1
        (200, "this is not a digest\n"),
    ])
    func aDigestFileThatGivesNoDigestFailsTheJobWithoutTheDownload(status: Int, text: String) async throws {
        let run = try fetchingDigestFile()
        answer(run, text, status: status)

        #expect(await eventually { (try? run.job("j1").state) == .failed })
        #expect(try run.job("j1").error?.code == ErrorCode.checksumUnavailable)
        #expect(run.transfers.jobIDs == ["SHA256SUMS"])
        #expect(try run.fixture.webhooksDue().contains("download.failed"))
        await run.stop()
    }

    /// A digest file that is busy or cannot be reached is tried again, on the same URL: the
    /// attempt never asked the job's URL, so it says nothing about it.
    @Test(arguments: [TransferResult(httpStatus: 503), TransferResult(failure: .network("connection reset"))])
    func aDigestFileThatIsNotThereNowIsTriedAgain(result: TransferResult) async throws {
        let run = try fetchingDigestFile()
        run.transfers.complete("SHA256SUMS", with: result)

        #expect(await eventually { (try? run.waitingFor("j1")) == .retry })
        #expect(try run.outcomes("j1") == ["retry"])
        #expect(try run.job("j1").mirrorIndex == 0)
        #expect(run.transfers.jobIDs == ["SHA256SUMS"])
        await run.stop()
    }

    /// Paused while its digest file is fetched, the job is not downloaded; resumed, its attempt
    /// begins with the digest file again.
    @Test func aPauseWhileTheDigestFileIsFetchedEndsTheAttempt() async throws {
        let run = try fetchingDigestFile()
        try run.stop("j1", as: .paused, reason: .pause)
        #expect(await eventually { (try? run.outcomes("j1")) == ["paused"] })
        #expect(run.transfers.cancelled.map(\.jobID) == ["SHA256SUMS"])

        try run.resume("j1")
        #expect(run.transfers.jobIDs == ["SHA256SUMS", "SHA256SUMS"])
        await run.stop()
    }
}
