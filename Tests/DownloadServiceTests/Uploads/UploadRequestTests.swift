import DownloadCore
@testable import DownloadService
import Foundation
import Glibc
import TestSupport
import Testing
import Transfer

/// A plain upload's attempt as a request for the engine, and the reply it keeps of the answer.
@Suite struct UploadRequestTests {
    func upload(method: UploadMethod = .put, size: Int64 = 11) throws -> Download {
        var job = makeDownload("up1")
        job.headers = [OriginHeader(name: "Authorization", value: "Bearer t")]
        job.maxBytesPerSecond = 65536
        job.upload = UploadPlan(source: try Destination.parse("exports/a.csv").get(), method: method, contentType: "text/csv",
                                pin: SourcePin(size: size, modifiedAt: 1))
        return job
    }

    @Test(arguments: [UploadMethod.put, .post])
    func theSourceIsTheBodyReadThroughItsDescriptor(_ method: UploadMethod) throws {
        let fixture = try ServiceFixture()
        let template = TransferTemplate(configuration: try fixture.configuration([:]))
        let job = try upload(method: method)
        let source = SourceFile(fd: open("/dev/null", O_RDONLY))
        let request = template.uploadRequest(for: job, plan: try #require(job.upload), source: source, replyPath: nil, now: 0)

        #expect(request.url == job.url && request.method.rawValue == method.rawValue)
        #expect(request.bodyFile == TransferRequest.FileRange(path: "exports/a.csv", offset: 0, length: 11, descriptor: source.fd))
        #expect(request.keepsResponseHeaders && !request.followRedirects)
        #expect(request.headers.map { "\($0.0): \($0.1)" } == ["Authorization: Bearer t", "Content-Type: text/csv"])
        #expect(request.maxSpeedBytesPerSecond == 65536)
        guard case .memory(let limit) = request.sink else { Issue.record("not a memory sink"); return }
        #expect(limit == UploadReply.maxBodyBytes + 1)
    }

    @Test func aReplyDestinationTakesTheBody() throws {
        let fixture = try ServiceFixture()
        let template = TransferTemplate(configuration: try fixture.configuration([:]))
        let job = try upload()
        let request = template.uploadRequest(for: job, plan: try #require(job.upload), source: SourceFile(fd: open("/dev/null", O_RDONLY)),
                                             replyPath: "/data/partial/up1", now: 0)
        guard case .file(let path, let validator) = request.sink else { Issue.record("not a file sink"); return }
        #expect(path == "/data/partial/up1" && validator == nil)
    }

    @Test func theReplyKeepsTheStatusTheHeadersAClientActsOnAndShortText() {
        var result = TransferResult(httpStatus: 201, responseBody: Array(#"{"id":7}"#.utf8))
        result.responseHeaders = [("content-type", "application/json"), ("location", "/files/7"), ("etag", "\"e7\""), ("server", "x")]
        #expect(UploadReply(result, bodyInMemory: true)
                == UploadReply(status: 201, contentType: "application/json", location: "/files/7", etag: "\"e7\"", body: #"{"id":7}"#))
        #expect(UploadReply(result, bodyInMemory: false)?.body == nil)

        result.responseBody = Array(repeating: 0x61, count: UploadReply.maxBodyBytes + 1)
        #expect(UploadReply(result, bodyInMemory: true)?.body == nil)
        #expect(UploadReply(TransferResult(failure: .timeout("no answer")), bodyInMemory: true) == nil)
    }
}
