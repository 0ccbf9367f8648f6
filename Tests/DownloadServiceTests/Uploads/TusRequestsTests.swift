import DownloadCore
@testable import DownloadService
import Foundation
import Glibc
import TestSupport
import Testing
import Transfer

/// A tus upload's requests as the engine gets them, and what is read from the server's answers.
@Suite struct TusRequestsTests {
    func upload() throws -> Download {
        var job = makeDownload("up1")
        job.url = "https://up.example/files/"
        job.headers = [OriginHeader(name: "Authorization", value: "Bearer t")]
        job.upload = UploadPlan(source: try Destination.parse("exports/a b.csv").get(), uploadProtocol: .tus, contentType: "text/csv",
                                pin: SourcePin(size: 10_000, modifiedAt: 1))
        return job
    }

    func template() throws -> TransferTemplate {
        TransferTemplate(configuration: try ServiceFixture().configuration([:]))
    }

    func headers(_ request: TransferRequest) -> [String] { request.headers.map { "\($0.0): \($0.1)" } }

    @Test func theCreationAnnouncesTheSizeTheNameAndTheType() throws {
        let job = try upload()
        let request = try template().tusCreation(for: job, plan: try #require(job.upload), now: 0)
        #expect(request.method == .post && request.url == "https://up.example/files/" && request.bodyFile == nil)
        #expect(headers(request) == ["Authorization: Bearer t", "Tus-Resumable: 1.0.0", "Upload-Length: 10000",
                                     "Upload-Metadata: filename YSBiLmNzdg==,filetype dGV4dC9jc3Y="])
        #expect(request.keepsResponseHeaders && !request.followRedirects)
    }

    @Test func aChunkIsPatchedAtItsOffsetFromTheSourcesDescriptor() throws {
        let job = try upload()
        let source = SourceFile(fd: open("/dev/null", O_RDONLY))
        let request = try template().tusChunk(to: "https://up.example/files/r1", for: job, plan: try #require(job.upload), source: source,
                                              offset: 4096, length: 4096, now: 0)
        #expect(request.method == .patch && request.url == "https://up.example/files/r1")
        #expect(request.bodyFile == TransferRequest.FileRange(path: "exports/a b.csv", offset: 4096, length: 4096, descriptor: source.fd))
        #expect(headers(request) == ["Authorization: Bearer t", "Tus-Resumable: 1.0.0", "Upload-Offset: 4096",
                                     "Content-Type: application/offset+octet-stream"])
    }

    @Test func theOffsetIsAskedWithAHeadAndTheResourceEndedWithADelete() throws {
        let job = try upload()
        let head = try template().tusOffset(of: "https://up.example/files/r1", for: job, now: 0)
        #expect(head.method == .head && head.url == "https://up.example/files/r1")
        let delete = try template().tusTermination(of: "https://up.example/files/r1", for: job)
        #expect(delete.method == .delete && headers(delete) == ["Authorization: Bearer t", "Tus-Resumable: 1.0.0"])
    }

    func answer(_ status: Int, _ headers: [(String, String)], url: String = "https://up.example/files/") -> TransferResult {
        var result = TransferResult(httpStatus: status, effectiveURL: url)
        result.responseHeaders = headers.map { (name: $0.0, value: $0.1) }
        return result
    }

    @Test func theCreatedResourceIsTheLocationResolvedAgainstTheEndpoint() {
        #expect(TusAnswer.createdResource(answer(201, [("location", "/files/r1")]), asked: "x") == "https://up.example/files/r1")
        #expect(TusAnswer.createdResource(answer(201, [("location", "https://other.example/r2")]), asked: "x") == "https://other.example/r2")
        #expect(TusAnswer.createdResource(answer(200, [("location", "/files/r1")]), asked: "x") == nil)
        #expect(TusAnswer.createdResource(answer(201, []), asked: "x") == nil)
    }

    @Test func theOffsetIsTakenFromA2xxOnly() {
        #expect(TusAnswer.offset(answer(204, [("upload-offset", "4096")])) == 4096)
        #expect(TusAnswer.offset(answer(200, [("upload-offset", " 0 ")])) == 0)
        #expect(TusAnswer.offset(answer(409, [("upload-offset", "4096")])) == nil)
        #expect(TusAnswer.offset(answer(204, [("upload-offset", "-1")])) == nil)
        #expect(TusAnswer.offset(answer(204, [])) == nil)
        #expect(TusAnswer.resourceGone(answer(404, [])) && TusAnswer.resourceGone(answer(410, [])))
        #expect(!TusAnswer.resourceGone(answer(403, [])) && !TusAnswer.resourceGone(TransferResult(failure: .timeout("t"))))
    }

    @Test func chunksAreCheckedWithTheFirstAlgorithmBothSidesKnow() throws {
        #expect(TusAnswer.checksumAlgorithm(answer(204, [("tus-extension", "creation, checksum"), ("tus-checksum-algorithm", "md5,SHA1")])) == .sha1)
        #expect(TusAnswer.checksumAlgorithm(answer(204, [("tus-extension", "checksum"), ("tus-checksum-algorithm", "sha1,sha256")])) == .sha256)
        #expect(TusAnswer.checksumAlgorithm(answer(204, [("tus-extension", "creation"), ("tus-checksum-algorithm", "sha1")])) == nil)
        #expect(TusAnswer.checksumAlgorithm(answer(204, [("tus-extension", "checksum"), ("tus-checksum-algorithm", "crc32")])) == nil)
        #expect(TusAnswer.checksumAlgorithm(answer(404, [("tus-extension", "checksum"), ("tus-checksum-algorithm", "sha1")])) == nil)
        // sha1("abc"), as the extension sends it: the algorithm, a space, the digest in base64.
        #expect(TusAnswer.checksumHeader(.sha1, hex: "a9993e364706816aba3e25717850c26c9cd0d89d") == "sha1 qZk+NkcGgWq6PiVxeFDCbJzQ2J0=")
        #expect(TusAnswer.checksumHeader(.sha1, hex: "a9z") == nil)
        let job = try upload()
        let chunk = try template().tusChunk(to: "https://up.example/files/r1", for: job, plan: try #require(job.upload),
                                            source: SourceFile(fd: open("/dev/null", O_RDONLY)), offset: 0, length: 3,
                                            checksum: "sha1 qZk+NkcGgWq6PiVxeFDCbJzQ2J0=", now: 0)
        #expect(headers(chunk).last == "Upload-Checksum: sha1 qZk+NkcGgWq6PiVxeFDCbJzQ2J0=")
        #expect(try template().tusOptions(for: job, now: 0).method == .options)
    }

    @Test func aTusResourceIsKeptAsTheJobsUpload() {
        let kept = ObjectUpload.tus(resource: "https://up.example/files/r1")
        #expect(ObjectUpload.parse(kept.text) == kept && kept.tusResource == "https://up.example/files/r1")
        #expect(ObjectUpload(key: "a/b", uploadID: "2~abc").tusResource == nil)
    }
}
