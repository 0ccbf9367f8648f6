import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
@testable import Transfer

extension Objects {
    /// Object attempts as the scheduler runs them, over a real store, the fake engine for the origin
    /// and a fake bucket: started on one connection into the staging file, followed, stopped, and
    /// settled into the bucket.
    @Suite struct ObjectAttemptRunnerTests {
        static let sums = "http://sums.example/SHA512SUMS"

        let fixture: ServiceFixture
        let s3 = FakeS3()
        let transfers = FakeTransfers()
        let scheduler: Scheduler

        init() throws {
            fixture = try ServiceFixture()
            let configuration = try fixture.configuration([:])
            let hub = EventHub(clock: fixture.clock.clock)
            let sweeper = UploadSweeper(store: fixture.store, client: s3.client, retention: .seconds(3600), clock: fixture.clock.clock,
                                        logger: ServiceFixture.quiet)
            scheduler = Scheduler(store: fixture.store, transfers: transfers, template: TransferTemplate(configuration: configuration),
                                  settlement: fixture.settlementContext(hub: hub), policy: SchedulingPolicy(capacity: configuration.capacity),
                                  disk: DiskSpace(paths: [fixture.partials.directory, fixture.files.root]),
                                  objectStorage: ObjectStorage(client: s3.client, partSize: ObjectTransferRun.partSize, sweeper: sweeper),
                                  hub: hub, clock: fixture.clock.clock, logger: ServiceFixture.quiet)
        }

        /// Stores `obj` into `s3://media/reports/q.bin` and starts its attempt as a pass would.
        func begin(_ adjust: (inout NewDownload) -> Void = { _ in }) throws {
            let destination = try Destination.parse("s3://media/reports/q.bin").get()
            try fixture.submit("obj", connections: 4) {
                $0.destination = destination
                adjust(&$0)
            }
            let job = try fixture.claim("obj")
            let now = fixture.clock.now
            scheduler.queue.sync {
                _ = scheduler.attempts.reserve(job, now: now, partialBytes: 0, discretionary: false)
                scheduler.attempts.start(job, resumeFrom: 0)
            }
        }

        /// The origin sends `body` whole: written into the staging file, reported, ended.
        func originSends(_ body: [UInt8]) throws {
            let attempt = try #require(transfers.all.last { $0.jobID == "obj" })
            try writeFile(attempt.partialPath, body)
            let size = Int64(body.count)
            var progress = TransferProgress(bytesOnDisk: size, bytesExpected: size, validator: "\"v1\"")
            progress.bodyStart = 0
            progress.effectiveURL = attempt.request.url
            transfers.progress("obj", progress)
            var result = TransferResult(httpStatus: 200, bytesOnDisk: size, bytesThisAttempt: size, bytesExpected: size, validator: "\"v1\"",
                                        effectiveURL: attempt.request.url)
            result.bodyComplete = true
            transfers.complete("obj", with: result)
        }

        func state() -> DownloadState? {
            try? fixture.job("obj").state
        }

        /// Shuts the scheduler down once every attempt's end is saved.
        func stop() async {
            await scheduler.shutdown(timeout: .seconds(30))
            #expect(scheduler.queue.sync { scheduler.attempts.active.isEmpty })
        }

        @Test func anObjectJobsAttemptGoesIntoTheBucketAndCompletesTheJob() async throws {
            try begin()
            let origin = try #require(transfers.all.first).request
            #expect(origin.url == "http://origin.example/obj")
            // Four connections: the first asks for the first part only.
            #expect(origin.writeLimit != nil && !origin.hashesFile && origin.firstPartLength == ObjectTransferRun.partSize)
            #expect(transfers.segments.isEmpty)

            let body = ObjectTest.noise(3000)
            try originSends(body)

            #expect(await eventually { state() == .completed })
            let done = try fixture.job("obj")
            #expect(done.path == "reports/q.bin" && done.sha256 == ObjectTest.sha256(body))
            #expect(done.objectETag == "\"put-etag\"")
            #expect(s3.operations == [.put])
            #expect(!fixture.partialExists("obj"))
            await stop()
        }

        /// Every part of the object stored, the completion's answer lost to a crash: over several
        /// connections the attempt ends as it starts, and the runner takes that end once it keeps
        /// the attempt (it had been taken inside the start, a fatal access conflict).
        @Test func anObjectWhosePartsAreAllStoredCompletesAsItsAttemptStarts() async throws {
            let part = ObjectTransferRun.partSize
            let body = ObjectTest.noise(Int(part) * 2)
            let destination = try Destination.parse("s3://media/reports/q.bin").get()
            try fixture.submit("obj", connections: 4) { $0.destination = destination }
            var job = try fixture.claim("obj")
            job.validator = "\"v1\""
            job.bytesExpectedFromOrigin = Int64(body.count)
            job.objectUpload = ObjectUpload(key: "reports/q.bin", uploadID: "upload-7",
                                            parts: [.init(number: 1, size: part, etag: "\"e1\""), .init(number: 2, size: part, etag: "\"e2\"")],
                                            digestState: ObjectTest.digestState(after: body))
            #expect(try fixture.store.update(job, expecting: [.running]))
            let now = fixture.clock.now
            scheduler.queue.sync {
                _ = scheduler.attempts.reserve(job, now: now, partialBytes: 0, discretionary: false)
                scheduler.attempts.start(job, resumeFrom: 0)
            }

            #expect(await eventually { state() == .completed })
            #expect(try fixture.job("obj").sha256 == ObjectTest.sha256(body))
            #expect(s3.operations == [.complete])
            #expect(s3.requests.first?.query["uploadId"] == "upload-7")
            #expect(transfers.all.isEmpty)
            await stop()
        }

        /// The e2e cancel: the origin stops, and the upload the attempt had begun is aborted.
        @Test func aCancelledObjectJobLeavesNoUploadBehind() async throws {
            try begin()
            let attempt = try #require(transfers.all.first)
            try writeFile(attempt.partialPath, ObjectTest.noise(Int(ObjectTransferRun.partSize)))
            var progress = TransferProgress(bytesOnDisk: ObjectTransferRun.partSize, bytesExpected: nil, validator: "\"v1\"")
            progress.bodyStart = 0
            transfers.progress("obj", progress)
            #expect(await eventually { s3.operations == [.create, .head, .part(1)] })
            #expect(await eventually { (try? fixture.job("obj").objectUpload?.parts.count) == 1 })

            var cancelled = try fixture.job("obj")
            cancelled.state = .cancelled
            cancelled.finishedAt = fixture.clock.now
            #expect(try fixture.store.update(cancelled, expecting: [.running]))
            scheduler.stop("obj", reason: .cancel)

            #expect(await eventually { (try? fixture.job("obj").objectUpload) == .some(nil) })
            #expect(s3.operations == [.create, .head, .part(1), .abort])
            #expect(s3.requests.last?.query["uploadId"] == "upload-1")
            #expect(transfers.cancelled.count == 1)
            #expect(!fixture.partialExists("obj"))
            await stop()
        }

        /// A node checks its running jobs against the store (a cancel or pause through another node, a
        /// lease lost) by this list: an object job's attempt is running too.
        @Test func aRunningObjectAttemptIsAmongTheStartedJobs() async throws {
            try begin()
            #expect(transfers.all.count == 1)

            #expect(scheduler.startedJobIDs() == ["obj"])
            await stop()
        }

        /// A SHA512SUMS digest file: the object's SHA-512 is computed as it goes up, and checked.
        @Test func aDigestFileOfAnotherAlgorithmIsCheckedForAnObject() async throws {
            try begin { $0.checksumURL = Self.sums }
            let body = ObjectTest.noise(3000)
            let sha512 = ObjectTest.sha512(body)
            transfers.complete("SHA512SUMS", with: TransferResult(httpStatus: 200, responseBody: Array("\(sha512)  q.bin\n".utf8)))
            #expect(await eventually { transfers.jobIDs == ["SHA512SUMS", "obj"] })

            try originSends(body)

            #expect(await eventually { state() != .running })
            let job = try fixture.job("obj")
            #expect(job.state == .completed)
            #expect(job.error == nil)
            #expect(s3.operations == [.put])
            await stop()
        }
    }
}
