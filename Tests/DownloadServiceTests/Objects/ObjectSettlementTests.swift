import Dispatch
import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
@testable import Transfer

extension Objects {
    /// Settling an object attempt whose bytes are all in: its digests are checked, then the upload is
    /// completed (or the object put whole) without replacing an object unless the job may, and what
    /// the bucket answered decides what becomes of the job, written to a real store.
    @Suite struct ObjectSettlementTests {
        static let key = "reports/q.bin"

        let fixture: ServiceFixture
        let s3 = FakeS3()
        let queue = DispatchQueue(label: "fetchd.test.object-settlement")
        let objects: ObjectAttempts

        init() throws {
            fixture = try ServiceFixture()
            let completer = Completer(queue: queue, store: fixture.store, logger: ServiceFixture.quiet)
            objects = ObjectAttempts(queue: queue, client: s3.client, partSize: ObjectTransferRun.partSize, transfers: FakeTransfers(),
                                     completer: completer, partials: fixture.partials, logger: ServiceFixture.quiet)
        }

        /// Three parts of a multipart upload, committed.
        static let upload = ObjectUpload(key: key, uploadID: "upload-7", parts: [
            ObjectUpload.Part(number: 1, size: 4096, etag: "\"e1\""),
            ObjectUpload.Part(number: 2, size: 4096, etag: "\"e2\""),
            ObjectUpload.Part(number: 3, size: 1000, etag: "\"e3\""),
        ], digestState: "v1:state:")

        /// The job `obj` into `s3://media/reports/q.bin`, running, with `upload` committed as the attempt committed it.
        func running(upload: ObjectUpload?, _ adjust: (inout NewDownload) -> Void = { _ in }) throws -> Download {
            let destination = try Destination.parse("s3://media/\(Self.key)").get()
            try fixture.submit("obj") {
                $0.destination = destination
                adjust(&$0)
            }
            var job = try fixture.claim("obj")
            if let upload {
                #expect(try fixture.store.apply([.objectUpload(id: "obj", upload: upload, expecting: [.running])]) == [true])
                job.objectUpload = upload
            }
            return job
        }

        /// Settles the attempt whose `body` is all in (in the staging file, for a PutObject) with its
        /// digest, and commits the write as the scheduler does.
        @discardableResult
        func settle(_ job: Download, body: [UInt8]) async throws -> [Bool] {
            let digest = try fixture.writePartial(job.id, body)
            let size = Int64(body.count)
            let result = TransferResult(httpStatus: 200, bytesOnDisk: size, bytesThisAttempt: size, bytesExpected: size, sha256: digest,
                                        validator: "\"v1\"", effectiveURL: job.url)
            let settlement = Settlement(context: fixture.settlementContext(), job: job, result: result, startedAt: fixture.clock.now,
                                        now: fixture.clock.now, jitter: 0)
            let (objects, store) = (objects, fixture.store)
            return await withCheckedContinuation { continuation in
                queue.async {
                    objects.settle(settlement, upload: job.objectUpload) { write in
                        let results = (try? store.apply(write.changes)) ?? []
                        if !results.isEmpty { write.committed(results) }
                        continuation.resume(returning: results)
                    }
                }
            }
        }

        /// The body of the object, its digest what the settlement checks.
        let body = ObjectTest.noise(9192)

        @Test(arguments: [true, false])
        func aDigestMismatchFailsTheJobAndSendsNothing(multipart: Bool) async throws {
            let job = try running(upload: multipart ? Self.upload : nil) { $0.sha256 = String(repeating: "0", count: 64) }

            #expect(try await settle(job, body: body) == [true])

            let failed = try fixture.job("obj")
            #expect(failed.state == .failed)
            #expect(failed.error?.code == ErrorCode.checksumMismatch)
            #expect(s3.requests.isEmpty)
            // The upload stays for the sweeper to abort: the job has nothing a retry could go on from.
            let toAbort = try fixture.store.uploadsToAbort(failedBefore: fixture.clock.now - 3_600_000, limit: 10)
            #expect(toAbort.map(\.id) == (multipart ? ["obj"] : []))
        }

        @Test func aCompletedUploadCompletesTheJobWithTheObjectsIdentity() async throws {
            s3.answer(.complete, with: FakeS3.answer(200, """
                <CompleteMultipartUploadResult><Key>\(Self.key)</Key>\
                <ETag>&quot;9b2cf535f27731c974343645a3985328-3&quot;</ETag></CompleteMultipartUploadResult>
                """, headers: [("x-amz-version-id", "3HL4kqtJlcpXroDTDmJ-rmSpXd3dIbrHY")]))
            let job = try running(upload: Self.upload)

            #expect(try await settle(job, body: body) == [true, true])

            let complete = try #require(s3.requests.first)
            #expect(s3.operations == [.complete])
            #expect(complete.key == Self.key && complete.query["uploadId"] == "upload-7")
            #expect(complete.header("If-None-Match") == "*")
            #expect(complete.bodyText.contains("<PartNumber>1</PartNumber><ETag>\"e1\"</ETag>"))
            #expect(complete.bodyText.contains("<PartNumber>3</PartNumber><ETag>\"e3\"</ETag>"))
            let done = try fixture.job("obj")
            #expect(done.state == .completed)
            #expect(done.path == Self.key)
            #expect(done.sha256 == ObjectTest.sha256(body))
            #expect(done.objectETag == "\"9b2cf535f27731c974343645a3985328-3\"")
            #expect(done.objectVersionID == "3HL4kqtJlcpXroDTDmJ-rmSpXd3dIbrHY")
            #expect(done.objectUpload == nil)
            #expect(!fixture.partialExists("obj"))
            #expect(try fixture.webhooksDue() == ["download.completed"])
        }

        /// An object of one part at most goes up whole, from the staging file, signed with its digest.
        @Test func aSmallObjectIsPutWholeOnlyIfNoneIsThere() async throws {
            let job = try running(upload: nil)
            let small = Array(body[0..<3000])

            #expect(try await settle(job, body: small) == [true, true])

            let put = try #require(s3.requests.first)
            #expect(s3.operations == [.put])
            #expect(put.key == Self.key)
            #expect(put.header("If-None-Match") == "*")
            #expect(put.header("x-amz-content-sha256") == ObjectTest.sha256(small))
            #expect(put.request.bodyFile == TransferRequest.FileRange(path: fixture.partials.path("obj"), offset: 0, length: 3000))
            let done = try fixture.job("obj")
            #expect(done.state == .completed && done.path == Self.key)
            #expect(done.objectETag == "\"put-etag\"" && done.objectVersionID == nil)
        }

        @Test(arguments: [true, false])
        func overwriteWritesWithoutCondition(multipart: Bool) async throws {
            let job = try running(upload: multipart ? Self.upload : nil) { $0.overwrite = true }

            try await settle(job, body: Array(body[0..<3000]))

            #expect(s3.operations == [multipart ? .complete : .put])
            #expect(s3.requests.first?.header("If-None-Match") == nil)
            #expect(try fixture.job("obj").state == .completed)
        }

        /// onConflict rename: the object is put under the first free name, which becomes the job's path.
        @Test func aRenamedSmallObjectTakesTheFirstFreeName() async throws {
            s3.add(Self.key)
            let job = try running(upload: nil) { $0.renameOnConflict = true }

            #expect(try await settle(job, body: Array(body[0..<3000])) == [true, true])

            #expect(s3.operations == [.head, .head, .put])
            #expect(s3.requests.last?.key == "reports/q (1).bin")
            let done = try fixture.job("obj")
            #expect(done.state == .completed && done.path == "reports/q (1).bin")
        }

        /// An object put at the key meanwhile is never replaced.
        @Test func anObjectThatAppearedMeanwhileFailsTheJobWithDestinationExists() async throws {
            s3.answer(.complete, with: FakeS3.failure(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold"))
            let job = try running(upload: Self.upload)

            try await settle(job, body: body)

            let failed = try fixture.job("obj")
            #expect(failed.state == .failed)
            #expect(failed.error?.code == ErrorCode.destinationExists)
            #expect(s3.operations == [.complete])
        }

        /// The upload is gone (or S3 asks for a new one): the job goes back to the queue to start over.
        @Test(arguments: [(404, "NoSuchUpload"), (409, "ConditionalRequestConflict")])
        func aGoneUploadQueuesTheJobToStartTheObjectOver(status: Int, code: String) async throws {
            s3.answer(.complete, with: FakeS3.failure(status, code))
            let job = try running(upload: Self.upload)

            try await settle(job, body: body)

            let queued = try fixture.job("obj")
            #expect(queued.state == .queued)
            #expect(queued.bytesReceived == 0)
            #expect(queued.objectUpload == nil)
            #expect(queued.validator == nil)
            #expect(queued.error?.code == ErrorCode.storage)
            #expect(!fixture.partialExists("obj"))
        }

        /// A refusal no retry fixes (a wrong secret, a bucket that says no) fails the job at once.
        @Test func aRefusedRequestFailsTheJobWithStorageAndTheStoragesCode() async throws {
            s3.answer(.put, with: FakeS3.failure(403, "SignatureDoesNotMatch",
                                                 "The request signature we calculated does not match the signature you provided."))
            let job = try running(upload: nil)

            try await settle(job, body: Array(body[0..<3000]))

            let failed = try fixture.job("obj")
            #expect(failed.state == .failed)
            #expect(failed.error?.code == ErrorCode.storage)
            #expect(failed.error?.message.contains("SignatureDoesNotMatch") == true)
            #expect(failed.attempts == 1)
        }

        /// Storage that cannot be reached is an outage: the job waits in the queue with its upload,
        /// and the attempt does not count against its retries.
        @Test func anUnreachableStorageQueuesTheJobAsAnOutage() async throws {
            s3.answer(.complete, with: FakeS3.unreachable)
            let job = try running(upload: Self.upload)

            try await settle(job, body: body)

            let queued = try fixture.job("obj")
            #expect(queued.state == .queued)
            #expect(queued.error?.code == ErrorCode.storage)
            #expect(queued.outageAttempts == job.outageAttempts + 1)
            #expect(queued.objectUpload == Self.upload)
            #expect(queued.bytesReceived == Int64(body.count))
        }
    }
}
