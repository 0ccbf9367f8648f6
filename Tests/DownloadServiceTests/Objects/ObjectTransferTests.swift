import DownloadCore
@testable import DownloadService
import Testing
import TestSupport
@testable import Transfer

extension Objects {
    /// One attempt of a job whose destination is an object: the origin's body goes up part by part
    /// while it arrives, each part committed before its disk is given back and the download let on;
    /// a body of one part at most is only hashed, for the settlement's PutObject.
    @Suite struct ObjectTransferTests {
        static let part = ObjectTransferRun.partSize
        static let key = "movies/film.bin"

        /// A job resuming an upload whose first part (of `body`) went up and was committed.
        static func resuming(_ body: [UInt8], digestState: String? = nil) throws -> Download {
            var job = try ObjectTest.job()
            job.validator = "\"v1\""
            let first = ObjectUpload.Part(number: 1, size: part, etag: "\"etag-1-before\"")
            job.objectUpload = ObjectUpload(key: key, uploadID: "upload-9", parts: [first],
                                            digestState: digestState ?? ObjectTest.digestState(after: Array(body[0..<Int(part)])))
            return job
        }

        /// Under one part nothing goes up during the attempt: the caller puts the object whole.
        /// So too with the key a rename kept for an earlier attempt's put, which is neither resumed
        /// nor aborted as an upload.
        @Test(arguments: [nil, ObjectUpload.putting(key: "b (1).bin")])
        func aBodyUnderOnePartEndsWithItsDigestAndSendsNothingToTheBucket(kept: ObjectUpload?) async throws {
            var job = try ObjectTest.job()
            job.objectUpload = kept
            let run = try ObjectTransferRun(job)
            let body = ObjectTest.noise(3000)
            run.start()

            try run.write(body[...], at: 0)
            run.progress(onDisk: 3000)
            run.originEnds(onDisk: 3000)

            let result = try #require(await run.ended())
            #expect(result.failure == nil && result.httpStatus == 200)
            #expect(result.sha256 == ObjectTest.sha256(body))
            #expect(run.s3.requests.isEmpty)
            #expect(run.commits.isEmpty)
            let request = try #require(run.originRequest)
            #expect(!request.hashesFile && request.firstPartLength == nil)
            #expect(run.writeLimit == 2 * Self.part)
        }

        @Test func aBodyOfTwoAndAHalfPartsGoesUpAsThreePartsInOrder() async throws {
            let run = try ObjectTransferRun(try ObjectTest.job())
            let (part, size) = (Int(Self.part), Int(Self.part) * 5 / 2)
            let body = ObjectTest.noise(size)
            run.start()

            try run.write(body[0..<part], at: 0)
            run.progress(onDisk: Self.part)
            #expect(await eventually { run.s3.operations.count == 3 })
            try run.write(body[part..<2 * part], at: Self.part)
            run.progress(onDisk: 2 * Self.part)
            #expect(await eventually { run.s3.operations.count == 4 })
            try run.write(body[(2 * part)...], at: 2 * Self.part)
            run.originEnds(onDisk: Int64(size))

            let result = try #require(await run.ended())
            #expect(result.failure == nil)
            #expect(result.sha256 == ObjectTest.sha256(body))
            // onConflict fail: the bucket is asked whether the key is taken as the upload starts.
            #expect(run.s3.operations == [.create, .head, .part(1), .part(2), .part(3)])
            #expect(run.s3.requests.allSatisfy { $0.bucket == "media" && $0.key == Self.key })
            let parts = run.s3.requests.filter { $0.request.bodyFile != nil }
            let ranges = [0..<part, part..<2 * part, 2 * part..<size]
            #expect(parts.compactMap(\.request.bodyFile) == ranges.map {
                TransferRequest.FileRange(path: run.staging.path, offset: Int64($0.lowerBound), length: Int64($0.count))
            })
            #expect(parts.map { $0.header("x-amz-content-sha256") ?? "" } == ranges.map { ObjectTest.sha256(body[$0]) })
            #expect(parts.allSatisfy { $0.query["uploadId"] == "upload-1" })

            // The intent is committed before the upload is created, the upload before its first
            // part, then with each part and the digest after it.
            let commits = run.commits.compactMap { $0 }
            #expect(run.commits.count == 5 && commits.count == 5)
            #expect(commits.first == .creating(key: Self.key))
            #expect(commits.dropFirst().first == ObjectUpload(key: Self.key, uploadID: "upload-1"))
            #expect(commits.dropFirst().map { $0.parts.map(\.size) }
                    == [[], [Self.part], [Self.part, Self.part], [Self.part, Self.part, Self.part / 2]])
            #expect(commits.last?.parts.map(\.etag) == ["\"etag-1\"", "\"etag-2\"", "\"etag-3\""])
            for (commit, end) in zip(commits.dropFirst(2), ranges.map(\.upperBound)) {
                let restored = ResumableDigest(state: commit.digestState, extra: nil)
                #expect(restored?.finalize().sha256 == ObjectTest.sha256(body[0..<end]))
            }
        }

        /// A part's stretch stays on disk, and the download held, until the store has its commit.
        @Test func theDownloadIsLetOnOnlyOnceAPartIsCommitted() async throws {
            let run = try ObjectTransferRun(try ObjectTest.job())
            run.holdPartCommits()
            let body = ObjectTest.noise(Int(Self.part) * 2)
            run.start()
            #expect(run.writeLimit == 2 * Self.part)

            // Two parts in the file, the first of them reported.
            try run.write(body[...], at: 0)
            run.progress(onDisk: Self.part)
            #expect(await eventually { run.pendingCommitCount == 1 })

            #expect(run.writeLimit == 2 * Self.part)
            #expect(run.stagedBytes(0..<Self.part) == Array(body[0..<Int(Self.part)]))
            run.answerCommit(kept: true)
            #expect(run.writeLimit == 3 * Self.part)
            #expect(run.stagedBytes(0..<Self.part).allSatisfy { $0 == 0 })
            #expect(run.stagedBytes(Self.part..<2 * Self.part) == Array(body[Int(Self.part)...]))
        }

        /// The attempt ends (and the caller completes the upload) only once the store has every
        /// part: a completion whose answer a crash lost is recognised by those parts.
        @Test func theAttemptEndsOnlyOnceEveryPartIsCommitted() async throws {
            let run = try ObjectTransferRun(try ObjectTest.job())
            run.holdPartCommits()
            let body = ObjectTest.noise(Int(Self.part) * 3 / 2)
            run.start()

            try run.write(body[...], at: 0)
            run.originEnds(onDisk: Int64(body.count))
            #expect(await eventually { run.s3.operations == [.create, .head, .part(1), .part(2)] && run.pendingCommitCount == 2 })
            run.answerCommit(kept: true)
            #expect(run.endingCount == 0)
            run.answerCommit(kept: true)

            let result = try #require(await run.ended())
            #expect(result.failure == nil && result.sha256 == ObjectTest.sha256(body))
        }

        /// A download waiting at its write limit reports no progress: what its writer wrote is
        /// enough for the parts that let it on.
        @Test func theWritersReportsAloneSendThePartsThatLetTheDownloadOn() async throws {
            let run = try ObjectTransferRun(try ObjectTest.job())
            let body = ObjectTest.noise(Int(Self.part) * 2)
            run.start()

            try run.write(body[0..<100], at: 0)
            run.progress(onDisk: 100)
            try run.write(body[100...], at: 100)
            run.writerWrote(2 * Self.part)

            #expect(await eventually { run.s3.operations == [.create, .head, .part(1), .part(2)] })
            #expect(await eventually { run.writeLimit == 4 * Self.part })
            #expect(run.endingCount == 0)
        }

        /// The job is no longer this node's to write (cancelled, taken over): the part's bytes stay.
        @Test func aPartTheStoreDidNotKeepNeitherLeavesTheDiskNorLetsTheDownloadOn() async throws {
            let run = try ObjectTransferRun(try ObjectTest.job())
            run.holdPartCommits()
            let body = ObjectTest.noise(Int(Self.part))
            run.start()

            try run.write(body[...], at: 0)
            run.progress(onDisk: Self.part)
            #expect(await eventually { run.pendingCommitCount == 1 })
            run.answerCommit(kept: false)

            #expect(run.writeLimit == 2 * Self.part)
            #expect(run.stagedBytes(0..<Self.part) == body)
        }

        /// The last attempt kept its intent to create an upload and no upload id (a crash came
        /// between): the key's uploads without parts are aborted before another is created.
        @Test func anIntentLeftByACrashIsSweptBeforeTheUploadIsCreated() async throws {
            let s3 = FakeS3()
            s3.answer(.other, with: FakeS3.answer(200, """
                <ListMultipartUploadsResult><Upload><Key>\(Self.key)</Key><UploadId>lost</UploadId></Upload>\
                </ListMultipartUploadsResult>
                """))
            s3.answer(.other, with: FakeS3.answer(200, "<ListPartsResult></ListPartsResult>"))
            var job = try ObjectTest.job()
            job.objectUpload = .creating(key: Self.key)
            let run = try ObjectTransferRun(job, s3: s3)
            run.start()

            try run.write(ObjectTest.noise(Int(Self.part) * 2)[...], at: 0)
            run.progress(onDisk: 2 * Self.part)

            #expect(await eventually { s3.operations == [.other, .other, .abort, .create, .head, .part(1), .part(2)] })
            #expect(s3.requests[2].query["uploadId"] == "lost")
            #expect(Array(run.commits.prefix(3)) == [nil, .creating(key: Self.key), ObjectUpload(key: Self.key, uploadID: "upload-1")])
        }

        /// A job that is no longer this node's begins no upload.
        @Test func aJobTheStoreNoLongerKeepsBeginsNoUpload() async throws {
            let run = try ObjectTransferRun(try ObjectTest.job())
            run.refuseCommits()
            run.start()

            try run.write(ObjectTest.noise(Int(Self.part) * 2)[...], at: 0)
            run.progress(onDisk: 2 * Self.part)
            #expect(await eventually { run.commits == [.creating(key: Self.key)] })
            run.turn()
            #expect(run.endingCount == 0)

            run.cancel()
            #expect(await run.ended()?.failure == .cancelled)
            #expect(run.s3.requests.isEmpty)
        }

        /// An upload begun as the job stopped being this node's is aborted before any part.
        @Test func anUploadTheStoreDidNotKeepIsAbortedAndNothingMoreGoesUp() async throws {
            let run = try ObjectTransferRun(try ObjectTest.job())
            run.refuseCommits(after: 1)
            run.start()

            try run.write(ObjectTest.noise(Int(Self.part) * 2)[...], at: 0)
            run.progress(onDisk: 2 * Self.part)
            #expect(await eventually { run.s3.operations == [.create, .head, .abort] })
            run.turn()
            #expect(run.s3.requests.last?.query["uploadId"] == "upload-1")
            #expect(run.commits.count == 2)
            #expect(run.endingCount == 0)

            run.cancel()
            #expect(await run.ended()?.failure == .cancelled)
            #expect(run.s3.operations == [.create, .head, .abort])
        }

        /// The job goes on from its committed parts, here on a node without its staging file.
        @Test func aJobResumingItsUploadSendsOnlyThePartsAfterTheCommittedOnes() async throws {
            let size = Int(Self.part) * 5 / 2
            let body = ObjectTest.noise(size)
            let run = try ObjectTransferRun(try Self.resuming(body))
            run.start()

            #expect(run.staging.length == Self.part)
            guard case .file(_, let validator)? = run.originRequest?.sink else { Issue.record("not a file sink"); return }
            #expect(validator == "\"v1\"")
            #expect(run.writeLimit == 3 * Self.part)
            try run.write(body[Int(Self.part)...], at: Self.part)
            run.progress(onDisk: Int64(size), bodyStart: Self.part)
            run.originEnds(onDisk: Int64(size))

            let result = try #require(await run.ended())
            #expect(result.failure == nil)
            #expect(result.sha256 == ObjectTest.sha256(body))
            #expect(run.s3.operations == [.part(2), .part(3)])
            #expect(run.s3.requests.allSatisfy { $0.query["uploadId"] == "upload-9" })
            #expect(run.s3.requests.map(\.request.bodyFile?.offset) == [Self.part, 2 * Self.part])
            let last = try #require(run.commits.last ?? nil)
            #expect(last.parts.map(\.etag) == ["\"etag-1-before\"", "\"etag-2\"", "\"etag-3\""])
        }

        /// A 200 where the committed parts asked for a 206: another representation, from its first byte.
        @Test func aWholeResponseToAResumeStartsTheObjectOver() async throws {
            let run = try ObjectTransferRun(try Self.resuming(ObjectTest.noise(Int(Self.part))))
            let fresh = ObjectTest.noise(3000, seed: 99)
            run.start()

            try writeFile(run.staging.path, fresh)
            run.progress(onDisk: 3000, bodyStart: 0)
            run.originEnds(onDisk: 3000)

            let result = try #require(await run.ended())
            #expect(result.failure == nil)
            #expect(result.sha256 == ObjectTest.sha256(fresh))
            #expect(run.s3.operations == [.abort])
            #expect(run.s3.requests.first?.query["uploadId"] == "upload-9")
            #expect(run.s3.requests.first?.key == Self.key)
            #expect(run.commits == [nil])
        }

        /// The old upload is forgotten in the store only once its abort is answered (a crash
        /// before finds it there to abort), and no other upload is created meanwhile.
        @Test func anAbandonedUploadIsForgottenOnlyOnceItsAbortIsAnswered() async throws {
            let s3 = FakeS3()
            s3.reply(to: .abort, with: .hold)
            let run = try ObjectTransferRun(try Self.resuming(ObjectTest.noise(Int(Self.part))), s3: s3)
            let fresh = ObjectTest.noise(Int(Self.part) * 2, seed: 99)
            run.start()

            try writeFile(run.staging.path, fresh)
            run.progress(onDisk: 2 * Self.part, bodyStart: 0)
            #expect(await eventually { s3.heldCount == 1 })
            run.turn()
            #expect(run.commits.isEmpty)
            #expect(s3.operations == [.abort])

            s3.releaseFirst()
            #expect(await eventually { s3.operations == [.abort, .create, .head, .part(1), .part(2)] })
            #expect(run.commits.first == .some(nil))
            #expect(run.commits.dropFirst().first == .creating(key: Self.key))
        }

        /// A state written by another build cannot go on: the upload is aborted, the download starts at 0.
        @Test func anUploadWhoseDigestCannotBeRestoredStartsOver() async throws {
            let run = try ObjectTransferRun(try Self.resuming([], digestState: "v1:bm90IGEgc3RhdGU=:"))
            try run.staging.setLength(Self.part)
            run.start()

            #expect(await eventually { run.s3.operations == [.abort] })
            #expect(run.s3.requests.first?.query["uploadId"] == "upload-9")
            #expect(run.commits == [nil])
            #expect(run.staging.length == 0)
            guard case .file(_, let validator)? = run.originRequest?.sink else { Issue.record("not a file sink"); return }
            #expect(validator == nil)
        }

        @Test func aStorageFailureStopsTheOriginAndEndsTheAttemptWithIt() async throws {
            let s3 = FakeS3()
            s3.answer(.part(2), with: FakeS3.failure(503, "SlowDown", "Please reduce your request rate."))
            let run = try ObjectTransferRun(try ObjectTest.job(), s3: s3)
            let body = ObjectTest.noise(Int(Self.part) * 2)
            run.start()

            try run.write(body[...], at: 0)
            run.progress(onDisk: 2 * Self.part)

            let result = try #require(await run.ended())
            guard case .storage(.unavailable(let message))? = result.failure else {
                Issue.record("expected a storage failure, got \(String(describing: result.failure))")
                return
            }
            #expect(message.contains("SlowDown"))
            #expect(result.sha256 == nil)
            #expect(run.transfers.cancelled.count == 1)
            #expect(s3.operations == [.create, .head, .part(1), .part(2)])
            #expect(run.commits.last??.parts.count == 1)
        }

        /// Two parts go up at once (the storage is never idle while a part is read and signed); the
        /// second may answer first, and counts only once the first has: parts are committed in order.
        @Test func twoPartsGoUpAtOnceAndAreCommittedInOrder() async throws {
            let s3 = FakeS3()
            s3.reply(to: .part(1), with: .hold)
            s3.reply(to: .part(2), with: .hold)
            let run = try ObjectTransferRun(try ObjectTest.job(), s3: s3)
            let body = ObjectTest.noise(Int(Self.part) * 2)
            run.start()

            try run.write(body[...], at: 0)
            run.progress(onDisk: 2 * Self.part)
            #expect(await eventually { s3.heldCount == 2 })

            s3.releaseLast()
            run.turn()
            #expect(run.commits.count == 2 && run.commits.last??.parts.isEmpty == true)
            s3.releaseFirst()
            #expect(await eventually { run.commits.count == 3 })
            #expect(run.commits.last??.parts.map(\.number) == [1, 2])

            run.originEnds(onDisk: 2 * Self.part)
            let result = try #require(await run.ended())
            #expect(result.failure == nil && result.sha256 == ObjectTest.sha256(body))
        }

        /// The upload is gone from the bucket: it is forgotten, and the settlement starts the object over.
        @Test func aGoneUploadIsForgotten() async throws {
            let s3 = FakeS3()
            s3.answer(.part(1), with: FakeS3.failure(404, "NoSuchUpload", "The specified upload does not exist."))
            let run = try ObjectTransferRun(try ObjectTest.job(), s3: s3)
            run.start()

            try run.write(ObjectTest.noise(Int(Self.part))[...], at: 0)
            run.progress(onDisk: Self.part)

            let result = try #require(await run.ended())
            #expect(result.failure == .storage(.noSuchUpload))
            #expect(run.commits.count == 3 && run.commits.last == .some(nil))
            #expect(s3.operations == [.create, .head, .part(1)])
        }

        /// onConflict fail: an object already at the key fails the attempt before its first part.
        @Test func anObjectAlreadyThereFailsTheAttemptAtOnceAndItsUploadIsAborted() async throws {
            let run = try ObjectTransferRun(try ObjectTest.job(), s3: FakeS3(existing: [Self.key]))
            run.start()

            try run.write(ObjectTest.noise(Int(Self.part))[...], at: 0)
            run.progress(onDisk: Self.part)

            let result = try #require(await run.ended())
            #expect(result.failure == .storage(.exists))
            #expect(run.s3.operations == [.create, .head, .abort])
            #expect(run.s3.requests.last?.query["uploadId"] == "upload-1")
            // The intent stays: the job's end sweeps the key for what it may still hold.
            #expect(run.commits == [.creating(key: Self.key)])
            #expect(run.transfers.cancelled.count == 1)
        }

        @Test func underAPrefixTheUploadGoesToTheNameTheOriginGave() async throws {
            let run = try ObjectTransferRun(try ObjectTest.job(destination: "s3://media/incoming/"))
            let size = Int(Self.part) * 3 / 2
            run.start()

            try run.write(ObjectTest.noise(size)[...], at: 0)
            run.progress(onDisk: Int64(size), contentDisposition: "attachment; filename=\"q3.csv\"")
            run.originEnds(onDisk: Int64(size), contentDisposition: "attachment; filename=\"q3.csv\"")

            #expect(await run.ended()?.failure == nil)
            #expect(run.s3.operations == [.create, .head, .part(1), .part(2)])
            #expect(run.s3.requests.allSatisfy { $0.key == "incoming/q3.csv" })
            #expect(run.commits.first??.key == "incoming/q3.csv")
        }

        /// A cancel stops the origin at once; the part under way is answered before the attempt ends.
        @Test func aCancelEndsTheAttemptOnceThePartUnderWayIsAnswered() async throws {
            let s3 = FakeS3()
            s3.reply(to: .part(1), with: .hold)
            let run = try ObjectTransferRun(try ObjectTest.job(), s3: s3)
            run.start()
            try run.write(ObjectTest.noise(Int(Self.part))[...], at: 0)
            run.progress(onDisk: Self.part)
            #expect(await eventually { s3.heldCount == 1 })

            run.cancel()
            run.turn()
            #expect(run.transfers.cancelled.count == 1)
            #expect(run.endingCount == 0)

            s3.releaseFirst()
            let result = try #require(await run.ended())
            #expect(result.failure == .cancelled)
            #expect(result.sha256 == nil)
            #expect(run.commits.last??.parts.count == 1)
            #expect(s3.operations == [.create, .head, .part(1)])
        }
    }
}
