import Foundation
import Testing
@testable import Transfer

/// The client against a stand-in engine: what it hands to `run`, and what it makes of the result.
@Suite struct ObjectStorageClientTests {
    @Test func createMultipartUploadSendsOneRequestAndGivesTheUploadID() async {
        let engine = CannedEngine(S3Fixture.answer(200, ObjectStorageAnswerTests.initiated))
        let client = engine.client()

        let result = await outcome { client.createMultipartUpload(S3Fixture.location, completion: $0) }

        #expect(result == .success("VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"))
        #expect(engine.requests.count == 1)
        #expect(engine.requests.first?.url == "http://127.0.0.1:9000/media/jobs/42/movie%20%28final%29.mkv?uploads=")
        #expect(engine.requests.first?.headerLines.contains("Content-Type: application/octet-stream") == true)
    }

    @Test func uploadPartGivesThePartAsCompleteWillNameIt() async {
        let engine = CannedEngine(S3Fixture.answer(200, headers: [("ETag", "\"4593f81bd2db09f467e3fdd2add670c9\"")]))
        let client = engine.client()

        let result = await outcome {
            client.uploadPart(S3Fixture.location, uploadID: "up-1", number: 2, body: S3Fixture.range,
                              sha256: S3Fixture.bodySHA256, completion: $0)
        }

        #expect(result == .success(UploadedPart(number: 2, size: 5 << 20, etag: "\"4593f81bd2db09f467e3fdd2add670c9\"")))
        #expect(engine.requests.first?.bodyFile == S3Fixture.range)
        #expect(engine.requests.first?.url.hasSuffix("?partNumber=2&uploadId=up-1") == true)
    }

    /// What a crash while an upload was created leaves: the key's uploads without a part are
    /// aborted, one holding parts is not.
    @Test func theUploadsOfAKeyThatHoldNoPartAreAborted() async {
        let key = S3Fixture.location.key
        let listed = "<ListMultipartUploadsResult><Upload><Key>\(key)</Key><UploadId>held</UploadId></Upload>"
            + "<Upload><Key>\(key)</Key><UploadId>lost</UploadId></Upload></ListMultipartUploadsResult>"
        let held = #"<ListPartsResult><Part><PartNumber>1</PartNumber><ETag>"e1"</ETag><Size>5</Size></Part></ListPartsResult>"#
        let engine = CannedEngine(S3Fixture.answer(200, listed), S3Fixture.answer(200, held),
                                  S3Fixture.answer(200, "<ListPartsResult></ListPartsResult>"), S3Fixture.answer(204))

        let result = await outcome { engine.client().abortUploadsWithoutParts(S3Fixture.location, completion: $0) }

        #expect(result == .success(1))
        #expect(engine.requests.map(\.method) == [.get, .get, .get, .delete])
        #expect(engine.requests.last?.url.hasSuffix("?uploadId=lost") == true)
    }

    @Test func anUnreadableListingAbortsNothing() async {
        let engine = CannedEngine(S3Fixture.answer(503, S3Fixture.error("SlowDown", "Reduce your request rate.")))

        let result = await outcome { engine.client().abortUploadsWithoutParts(S3Fixture.location, completion: $0) }

        #expect(result == .failure(.unavailable("SlowDown (HTTP 503): Reduce your request rate.")))
        #expect(engine.requests.count == 1)
    }

    @Test func aCompletedUploadGivesTheStoredObject() async {
        let engine = CannedEngine(S3Fixture.answer(200, ObjectStorageAnswerTests.completed, headers: [("x-amz-version-id", "v1")]))
        let client = engine.client()
        let parts = [UploadedPart(number: 1, size: 5 << 20, etag: "\"a\""), UploadedPart(number: 2, size: 3, etag: "\"b\"")]

        let result = await outcome {
            client.completeMultipartUpload(S3Fixture.location, uploadID: "up-1", parts: parts, ifNoneMatch: true, completion: $0)
        }

        #expect(result == .success(StoredObject(etag: "\"3858f62230ac3c915f300c664312c11f-9\"", versionID: "v1")))
        #expect(engine.requests.first?.body == CompleteMultipartUploadBody.xml(parts))
        #expect(engine.requests.first?.headerLines.contains("If-None-Match: *") == true)
    }

    @Test func aCompleteThat200sWithAnErrorIsToBeRetried() async {
        let engine = CannedEngine(S3Fixture.answer(200, "  " + S3Fixture.error("InternalError", "Please try again.")))
        let client = engine.client()

        let result = await outcome {
            client.completeMultipartUpload(S3Fixture.location, uploadID: "up-1", parts: [UploadedPart(number: 1, size: 1, etag: "\"a\"")],
                                           ifNoneMatch: false, completion: $0)
        }

        #expect(result == .failure(.unavailable("InternalError (HTTP 200): Please try again.")))
    }

    @Test func aConditionalPutOverAnObjectFindsItThere() async {
        let engine = CannedEngine(S3Fixture.answer(412, S3Fixture.error("PreconditionFailed", "At least one of the pre-conditions you specified did not hold")))
        let client = engine.client()

        let result = await outcome {
            client.putObject(S3Fixture.location, body: S3Fixture.range, sha256: S3Fixture.bodySHA256, ifNoneMatch: true, completion: $0)
        }

        #expect(result == .failure(.exists))
        #expect(engine.requests.first?.method == .put)
        #expect(engine.requests.first?.headerLines.last == "If-None-Match: *")
    }

    @Test func abortSucceedsWhenTheUploadIsAlreadyGone() async {
        let engine = CannedEngine(S3Fixture.answer(404, S3Fixture.error("NoSuchUpload", "The specified upload does not exist.")),
                                  S3Fixture.answer(503, S3Fixture.error("SlowDown", "Please reduce your request rate.")))
        let client = engine.client()

        let gone = await outcome { client.abortMultipartUpload(S3Fixture.location, uploadID: "up-1", completion: $0) }
        let busy = await outcome { client.abortMultipartUpload(S3Fixture.location, uploadID: "up-1", completion: $0) }

        #expect(gone.failure == nil)
        #expect(busy.failure == .unavailable("SlowDown (HTTP 503): Please reduce your request rate."))
        #expect(engine.requests.map(\.method) == [.delete, .delete])
    }

    @Test func objectExistsAsksWithHead() async {
        let engine = CannedEngine(S3Fixture.answer(200), S3Fixture.answer(404), TransferResult(failure: .unreachable("no route")))
        let client = engine.client()

        let there = await outcome { client.objectExists(S3Fixture.location, completion: $0) }
        let missing = await outcome { client.objectExists(S3Fixture.location, completion: $0) }
        let outage = await outcome { client.objectExists(S3Fixture.location, completion: $0) }

        #expect(there == .success(true))
        #expect(missing == .success(false))
        #expect(outage == .failure(.unreachable("no route")))
        #expect(engine.requests.map(\.method) == [.head, .head, .head])
    }

    /// The MD5s of "first part" and "second", and the MD5 of the two (Python's hashlib).
    static let answeredParts = [UploadedPart(number: 1, size: 10, etag: "\"550cf6b6e60f65a0e3104a26e70fea42\""),
                                UploadedPart(number: 2, size: 6, etag: "\"A9F0E61A137D86AA9DB53465E0801612\"")]
    static let theirObject = "\"93f26da1291790e1134809a03511cd15-2\""

    @Test func theETagOfAMultipartObjectIsTheMD5OfItsPartsMD5s() {
        #expect(StoredObject.etag(completing: Self.answeredParts) == Self.theirObject)
        // A part encrypted with a KMS or customer key has an ETag that is not its MD5.
        #expect(StoredObject.etag(completing: [UploadedPart(number: 1, size: 1, etag: "\"e1\"")]) == nil)
        #expect(StoredObject.etag(completing: []) == nil)
    }

    /// An earlier completion whose answer was lost: the upload is gone, and its object is at the key.
    @Test(arguments: [(404, "NoSuchUpload"), (412, "PreconditionFailed")])
    func anUploadGoneWithItsObjectAtTheKeyWasCompletedAlready(status: Int, code: String) async {
        let engine = CannedEngine(S3Fixture.answer(status, S3Fixture.error(code, "gone")),
                                  S3Fixture.answer(200, headers: [("ETag", Self.theirObject), ("x-amz-version-id", "v7")]))

        let result = await outcome {
            engine.client().completeMultipartUploadOnce(S3Fixture.location, uploadID: "up-1", parts: Self.answeredParts, ifNoneMatch: true,
                                                        completion: $0)
        }

        #expect(result == .success(StoredObject(etag: Self.theirObject, versionID: "v7")))
        #expect(engine.requests.map(\.method) == [.post, .head])
    }

    @Test func anUploadGoneWithAnotherObjectAtTheKeyStaysGone() async {
        let engine = CannedEngine(S3Fixture.answer(404, S3Fixture.error("NoSuchUpload", "gone")),
                                  S3Fixture.answer(200, headers: [("ETag", "\"93f26da1291790e1134809a03511cd15-3\"")]))

        let result = await outcome {
            engine.client().completeMultipartUploadOnce(S3Fixture.location, uploadID: "up-1", parts: Self.answeredParts, ifNoneMatch: false,
                                                        rechecks: [.zero], completion: $0)
        }

        #expect(result == .failure(.noSuchUpload))
        #expect(engine.requests.map(\.method) == [.post, .head])
    }

    /// The earlier completion may still be at work (its object not there yet): the key is looked
    /// at again, and the upload taken for gone only once the looks are spent.
    @Test func anUploadGoneWithNoObjectYetIsLookedForAgain() async {
        let gone = S3Fixture.answer(404, S3Fixture.error("NoSuchUpload", "gone"))
        let engine = CannedEngine(gone, S3Fixture.answer(404), S3Fixture.answer(404), S3Fixture.answer(200, headers: [("ETag", Self.theirObject)]),
                                  gone, S3Fixture.answer(404), S3Fixture.answer(404))
        let client = engine.client()

        let late = await outcome {
            client.completeMultipartUploadOnce(S3Fixture.location, uploadID: "up-1", parts: Self.answeredParts, ifNoneMatch: false,
                                               rechecks: [.zero, .zero, .zero], completion: $0)
        }
        let never = await outcome {
            client.completeMultipartUploadOnce(S3Fixture.location, uploadID: "up-1", parts: Self.answeredParts, ifNoneMatch: false,
                                               rechecks: [.zero], completion: $0)
        }

        #expect(late == .success(StoredObject(etag: Self.theirObject)))
        #expect(never == .failure(.noSuchUpload))
        #expect(engine.requests.map(\.method) == [.post, .head, .head, .head, .post, .head, .head])
    }

    /// An object put whole by an attempt whose answer was lost: the put finds an object at the key,
    /// and the one whose ETag is the body's MD5 is taken for it; another object is a conflict.
    @Test func aConditionalPutFindingItsOwnBodyAtTheKeyCountsAsPut() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("body")
        try Data("hello".utf8).write(to: URL(fileURLWithPath: path))
        let body = TransferRequest.FileRange(path: path, offset: 0, length: 5)
        let refused = S3Fixture.answer(412, S3Fixture.error("PreconditionFailed", "At least one of the pre-conditions you specified did not hold"))
        // "5d41402abc4b2a76b9719d911017c592" is the MD5 of "hello".
        let engine = CannedEngine(refused, S3Fixture.answer(200, headers: [("ETag", "\"5d41402abc4b2a76b9719d911017c592\"")]),
                                  refused, S3Fixture.answer(200, headers: [("ETag", "\"0d41402abc4b2a76b9719d911017c592\"")]))
        let client = engine.client()

        let own = await outcome { client.putObjectOnce(S3Fixture.location, body: body, sha256: S3Fixture.bodySHA256, ifNoneMatch: true, completion: $0) }
        let other = await outcome { client.putObjectOnce(S3Fixture.location, body: body, sha256: S3Fixture.bodySHA256, ifNoneMatch: true, completion: $0) }

        #expect(own == .success(StoredObject(etag: "\"5d41402abc4b2a76b9719d911017c592\"")))
        #expect(other == .failure(.exists))
        #expect(engine.requests.map(\.method) == [.put, .head, .put, .head])
    }

    @Test func whatCannotBeSentIsRefusedWithoutReachingTheEngine() async {
        let engine = CannedEngine()
        let client = engine.client()
        let broken = CannedEngine().client(S3Fixture.settings("minio:9000"))

        let badKey = await outcome { client.objectExists(ObjectLocation(bucket: "media", key: "a/../b"), completion: $0) }
        let badPart = await outcome {
            client.uploadPart(S3Fixture.location, uploadID: "u", number: 0, body: S3Fixture.range, sha256: S3Fixture.bodySHA256,
                              completion: $0)
        }
        let badSettings = await outcome { broken.createMultipartUpload(S3Fixture.location, completion: $0) }

        #expect(badKey.failure?.refusedCode == "InvalidKey")
        #expect(badPart.failure?.refusedCode == "InvalidArgument")
        #expect(badSettings.failure?.refusedCode == "InvalidSettings")
        #expect(engine.requests.isEmpty)
    }

    @Test func aRefusalFromTheServerKeepsItsStatusCodeAndMessage() async {
        let engine = CannedEngine(S3Fixture.answer(403, S3Fixture.error("SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided. Check your key and signing method.")))
        let client = engine.client()

        let result = await outcome { client.createMultipartUpload(S3Fixture.location, completion: $0) }

        #expect(result == .failure(.refused(status: 403, code: "SignatureDoesNotMatch",
            message: "The request signature we calculated does not match the signature you provided. Check your key and signing method.")))
    }
}
