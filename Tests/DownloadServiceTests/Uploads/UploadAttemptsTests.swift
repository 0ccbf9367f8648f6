import DownloadCore
@testable import DownloadService
import Foundation
import Persistence
import TestSupport
import Testing
import Transfer

/// Upload jobs run by the scheduler over a real store and real source files, the engine faked:
/// what each attempt sends, how its answers settle the job, and a source that changed.
@Suite struct UploadAttemptsTests {
    let source = Array("id,name\n1,fetchd\n".utf8)

    /// A scheduler taking uploads from its fixture's `uploads/`, with job `up1` queued to send
    /// `uploads/exports/a.csv` (pinned as it is now) to `http://up.example/files/up1`.
    func uploadQueued(method: UploadMethod = .put) throws -> (RunningScheduler, Download) {
        let run = try RunningScheduler(takesUploads: true)
        let root = run.uploadRoot
        try FileManager.default.createDirectory(atPath: root + "/exports", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: root + "/exports/a.csv", contents: Data(source)))
        let path = try Destination.parse("exports/a.csv").get()
        var job = makeDownload("up1")
        job.url = "http://up.example/files/up1"
        job.upload = UploadPlan(source: path, method: method, contentType: "text/csv",
                                pin: try UploadSources(root: root).pin(path).get())
        #expect(try run.fixture.store.insert(job, idempotency: nil) == .created)
        return (run, job)
    }

    /// What the engine gives for an answer: header names as it keeps them, lowercase; with
    /// `sentWhole`, after the whole source went, with the digest it computed as it read the body.
    func answered(_ status: Int, sentWhole: Bool = false, headers: [(String, String)] = [], body: String = "") -> TransferResult {
        var result = TransferResult(httpStatus: status, responseBody: Array(body.utf8))
        result.bytesSent = sentWhole ? Int64(source.count) : 0
        result.bodySHA256 = sentWhole ? ObjectTest.sha256(source) : nil
        result.responseHeaders = headers.map { (name: $0.0, value: $0.1) }
        return result
    }

    @Test(arguments: [UploadMethod.put, .post])
    func aSentSourceAnsweredWith2xxCompletesTheJobWithItsDigestAndReply(_ method: UploadMethod) async throws {
        let (run, _) = try uploadQueued(method: method)
        run.pass()
        let sent = try #require(run.transfers.all.first).request
        #expect(sent.url == "http://up.example/files/up1" && sent.method.rawValue == method.rawValue)
        #expect(sent.bodyFile?.length == Int64(source.count) && sent.bodyFile?.descriptor != nil)
        // The engine hashes the body as it reads it to send it.
        #expect(sent.bodyFile?.hashed == true)

        run.transfers.complete("up1", with: answered(201, sentWhole: true,
                                                     headers: [("location", "/files/up1/7"), ("content-type", "text/plain")], body: "stored\n"))
        #expect(await eventually { (try? run.job("up1").state) == .completed })
        let done = try run.job("up1")
        // The digest of what was sent.
        #expect(done.sha256 == ObjectTest.sha256(source) && done.bytesReceived == Int64(source.count))
        #expect(done.upload?.reply == UploadReply(status: 201, contentType: "text/plain", location: "/files/up1/7", body: "stored\n"))
        #expect(try run.outcomes("up1") == ["completed"])
        await run.stop()
    }

    /// The bytes sent so far, shown live and saved every second as a download's bytes received are.
    @Test func theBytesSentAreShownLiveAndSaved() async throws {
        let (run, _) = try uploadQueued()
        run.pass()
        var progress = TransferProgress(bytesOnDisk: 0, bytesExpected: nil)
        progress.bytesSent = 9
        run.transfers.progress("up1", progress)
        run.settle()
        #expect(run.scheduler.liveBytes(of: "up1") == 9)
        #expect(try run.job("up1").bytesReceived == 0)

        run.clock.advance(by: .seconds(1))
        progress.bytesSent = 12
        run.transfers.progress("up1", progress)
        #expect(await eventually { (try? run.job("up1").bytesReceived) == 12 })
        await run.stop()
    }

    /// A 307 or 308 sends the body again to where it points, in the same attempt.
    @Test func aRedirectSendsTheSourceAgainWhereItPoints() async throws {
        let (run, _) = try uploadQueued()
        run.pass()
        run.transfers.complete("up1", with: answered(307, headers: [("location", "/v2/files/up1")]))
        #expect(await eventually { run.transfers.all.count == 2 })
        #expect(run.transfers.all.last?.request.url == "http://up.example/v2/files/up1")
        #expect(run.transfers.all.last?.request.bodyFile?.length == Int64(source.count))
        run.transfers.complete("up1", with: answered(201, sentWhole: true))
        #expect(await eventually { (try? run.job("up1").state) == .completed })
        #expect(try run.outcomes("up1") == ["completed"])
        await run.stop()
    }

    /// `deleteSource`: removed once the completion is committed, if it is still the file sent.
    @Test(arguments: [false, true])
    func deleteSourceRemovesTheFileSentOnly(_ changedAfterwards: Bool) async throws {
        let (run, job) = try uploadQueued()
        var deleting = job
        deleting.upload?.deleteSource = true
        #expect(try run.fixture.store.update(deleting, expecting: [.queued]))
        run.pass()
        if changedAfterwards {
            // Rewritten after its bytes went: someone's new data, which stays.
            #expect(FileManager.default.createFile(atPath: sourcePath(of: run), contents: Data("new,data\n".utf8)))
        }
        run.transfers.complete("up1", with: answered(201, sentWhole: true))
        #expect(await eventually { (try? run.job("up1").state) != .running })
        // The source goes after the commit, in the same turn of the scheduler's queue, which a
        // reader may see committed first.
        run.settle()
        #expect(FileManager.default.fileExists(atPath: sourcePath(of: run)) == changedAfterwards)
        // Nor is the partial file that marked the removal as left to do.
        #expect(!run.fixture.partialExists("up1"))
        await run.stop()
    }

    @Test func aServerErrorIsRetriedWithTheReplyKept() async throws {
        let (run, _) = try uploadQueued()
        run.pass()
        run.transfers.complete("up1", with: answered(503, body: "busy"))
        #expect(await eventually { (try? run.outcomes("up1")) == ["retry"] })
        let queued = try run.job("up1")
        #expect(queued.state == .queued && queued.error?.code == ErrorCode.httpStatus)
        #expect(queued.upload?.reply == UploadReply(status: 503, body: "busy"))
        await run.stop()
    }

    @Test func aSourceChangedBeforeItsAttemptFailsWithoutSendingAByte() async throws {
        let (run, job) = try uploadQueued()
        let file = try #require(FileHandle(forWritingAtPath: sourcePath(of: run)))
        file.seekToEndOfFile()
        file.write(Data("2,more\n".utf8))
        try file.close()
        run.pass()
        #expect(await eventually { (try? run.job(job.id).state) == .failed })
        #expect(try run.job(job.id).error?.code == ErrorCode.sourceChanged)
        #expect(run.transfers.all.isEmpty)
        await run.stop()
    }

    @Test func aSourceChangedWhileItWasSentFailsTheJob() async throws {
        let (run, _) = try uploadQueued()
        run.pass()
        let file = try #require(FileHandle(forWritingAtPath: sourcePath(of: run)))
        file.write(Data("X".utf8))
        file.seekToEndOfFile()
        file.write(Data("3,late\n".utf8))
        try file.close()
        run.transfers.complete("up1", with: answered(201, sentWhole: true))
        #expect(await eventually { (try? run.job("up1").state) == .failed })
        let failed = try run.job("up1")
        #expect(failed.error?.code == ErrorCode.sourceChanged && failed.upload?.reply?.status == 201)
        await run.stop()
    }

    func sourcePath(of run: RunningScheduler) -> String {
        run.uploadRoot + "/exports/a.csv"
    }
}
