import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
@testable import Transfer

extension Objects {
    /// The sweeper of ended jobs' multipart uploads, over a real store: an upload left by a cancelled,
    /// completed or failed-for-good job is aborted in the bucket and then forgotten; one a retry can
    /// go on from stays; an abort that fails is tried again at the next sweep.
    @Suite struct UploadSweeperTests {
        static let retention: Duration = .seconds(3600)

        let fixture: ServiceFixture
        let s3 = FakeS3()
        let sweeper: UploadSweeper

        init() throws {
            fixture = try ServiceFixture()
            sweeper = UploadSweeper(store: fixture.store, client: s3.client, retention: Self.retention, clock: fixture.clock.clock,
                                    logger: ServiceFixture.quiet)
        }

        /// Stores job `id` into `s3://media/<id>.bin` in `state`, its upload (`up-<id>`, unless
        /// given) committed.
        @discardableResult
        func stored(_ id: String, _ state: DownloadState, bytesReceived: Int64 = 0, finishedAt: Int64? = nil,
                    upload given: ObjectUpload? = nil) throws -> ObjectUpload {
            let destination = try Destination.parse("s3://media/\(id).bin").get()
            var job = try fixture.submit(id) { $0.destination = destination }
            job.state = state
            job.bytesReceived = bytesReceived
            job.finishedAt = state.isTerminal ? finishedAt ?? fixture.clock.now : nil
            #expect(try fixture.store.update(job, expecting: [.queued]))
            let upload = given ?? ObjectUpload(key: "\(id).bin", uploadID: "up-\(id)",
                                               parts: [ObjectUpload.Part(number: 1, size: 4096, etag: "\"e1\"")])
            #expect(try fixture.store.apply([.objectUpload(id: id, upload: upload, expecting: [state])]) == [true])
            return upload
        }

        func upload(of id: String) throws -> ObjectUpload? {
            try fixture.job(id).objectUpload
        }

        /// Waits until the sweep asked for so far, and what its answers started, has run.
        func sweepDone() {
            for _ in 0..<3 { sweeper.queue.sync {} }
        }

        @Test func aCancelledJobsUploadIsAbortedOnceThenForgotten() async throws {
            try stored("c", .cancelled)

            sweeper.sweep()

            #expect(await eventually { (try? upload(of: "c")) == .some(nil) })
            sweepDone()
            #expect(s3.operations == [.abort])
            let abort = try #require(s3.requests.first)
            #expect(abort.method == .delete && abort.bucket == "media" && abort.key == "c.bin")
            #expect(abort.query == ["uploadId": "up-c"])
        }

        /// A job that ended while creating its upload kept no upload id: the sweep aborts the
        /// uploads of its key that hold no part, then forgets the intent.
        @Test func anIntentToCreateHasTheKeysUploadsWithoutPartsAborted() async throws {
            try stored("c", .cancelled, upload: .creating(key: "c.bin"))
            s3.answer(.other, with: FakeS3.answer(200, """
                <ListMultipartUploadsResult><Upload><Key>c.bin</Key><UploadId>lost</UploadId></Upload>\
                <Upload><Key>c.bin.1</Key><UploadId>other</UploadId></Upload></ListMultipartUploadsResult>
                """))
            s3.answer(.other, with: FakeS3.answer(200, "<ListPartsResult></ListPartsResult>"))

            sweeper.sweep()

            #expect(await eventually { (try? upload(of: "c")) == .some(nil) })
            sweepDone()
            #expect(s3.operations == [.other, .other, .abort])
            #expect(s3.requests.first?.query == ["prefix": "c.bin", "uploads": ""])
            #expect(s3.requests.map(\.query["uploadId"]) == [nil, "lost", "lost"])
        }

        /// The key a rename kept for an object put whole holds no upload: it is forgotten, and
        /// nothing is asked of the storage.
        @Test func theKeyOfAnObjectPutWholeIsForgottenWithoutARequest() async throws {
            try stored("p", .failed, upload: .putting(key: "p (1).bin"))

            sweeper.sweep()

            #expect(await eventually { (try? upload(of: "p")) == .some(nil) })
            sweepDone()
            #expect(s3.requests.isEmpty)
        }

        /// Credentials that may not list the bucket's uploads: nothing can be looked for, and the
        /// intent is forgotten (the bucket's lifecycle rules are left to remove such an upload).
        @Test func anIntentWhoseKeyCannotBeListedIsForgotten() async throws {
            try stored("c", .cancelled, upload: .creating(key: "c.bin"))
            s3.answer(.other, with: FakeS3.answer(403, FakeS3.error("AccessDenied", "Access Denied")))

            sweeper.sweep()

            #expect(await eventually { (try? upload(of: "c")) == .some(nil) })
            sweepDone()
            #expect(s3.operations == [.other])
        }

        /// A failed job a retry can go on from keeps its upload until retention is about to prune it;
        /// one with nothing kept, and a running one, are settled by what ends them.
        @Test func onlyUploadsNoRetryCanUseAreAborted() async throws {
            let now = fixture.clock.now
            try stored("recent", .failed, bytesReceived: 8192, finishedAt: now - 60_000)
            try stored("old", .failed, bytesReceived: 8192, finishedAt: now - Self.retention.wholeMilliseconds - 1)
            try stored("nothing", .failed, bytesReceived: 0, finishedAt: now)
            try stored("done", .completed)
            try stored("live", .queued, bytesReceived: 8192)

            sweeper.sweep()

            #expect(await eventually { s3.requests.count == 3 })
            #expect(await eventually { (try? ["old", "nothing", "done"].map(upload(of:))) == [nil, nil, nil] })
            sweepDone()
            #expect(Set(s3.requests.compactMap { $0.query["uploadId"] }) == ["up-old", "up-nothing", "up-done"])
            #expect(try upload(of: "recent") != nil)
            #expect(try upload(of: "live") != nil)
        }

        @Test func anAbortThatFailsLeavesTheUploadForTheNextSweep() async throws {
            s3.answer(.abort, with: FakeS3.failure(503, "ServiceUnavailable", "Please try again."))
            try stored("c", .cancelled)

            sweeper.sweep()
            #expect(await eventually { s3.requests.count == 1 })
            sweepDone()
            #expect(try upload(of: "c") != nil)

            sweeper.sweep()
            #expect(await eventually { (try? upload(of: "c")) == .some(nil) })
            #expect(s3.operations == [.abort, .abort])
        }

        /// A full batch whose aborts all fail (the storage down) waits for the next sweep like any
        /// other, rather than being sent again at once, and again.
        @Test func aFullBatchOfFailedAbortsIsNotSentAgainAtOnce() async throws {
            s3.reply(to: .abort, with: .hold, once: false)
            for number in 0..<UploadSweeper.batch { try stored("c\(number)", .cancelled) }

            sweeper.sweep()
            #expect(await eventually { s3.heldCount == UploadSweeper.batch })
            for _ in 0..<UploadSweeper.batch { s3.releaseFirst(with: FakeS3.unreachable) }
            sweepDone()

            #expect(s3.requests.count == UploadSweeper.batch)
            #expect(try upload(of: "c0") != nil)

            // The sweeps end once every abort is answered.
            for _ in 0..<3 where s3.heldCount > 0 {
                while s3.heldCount > 0 { s3.releaseFirst(with: FakeS3.answer(204)) }
                sweepDone()
            }
        }

        /// A client's cancel is written from the job as it read it; an upload the attempt committed
        /// in between must still reach the sweeper.
        @Test func anUploadCommittedWhileAClientCancelsIsStillAborted() async throws {
            let destination = try Destination.parse("s3://media/c.bin").get()
            try fixture.submit("c") { $0.destination = destination }
            _ = try fixture.claim("c")
            let read = try fixture.job("c")
            let upload = ObjectUpload(key: "c.bin", uploadID: "up-c")
            #expect(try fixture.store.apply([.objectUpload(id: "c", upload: upload, expecting: [.running])]) == [true])
            var cancelled = read
            cancelled.state = .cancelled
            cancelled.finishedAt = fixture.clock.now
            #expect(try fixture.store.update(cancelled, expecting: [.running]))

            sweeper.sweep()
            sweepDone()

            #expect(s3.operations == [.abort])
            #expect((try? self.upload(of: "c")) == .some(nil))
        }
    }
}
