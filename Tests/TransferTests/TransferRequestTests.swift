import Testing
@testable import Transfer

/// The fields only uploads, buckets and FTP/SFTP set are kept apart from the rest of a request.
@Suite struct TransferRequestTests {
    @Test func eachUploadFieldReadsBackAsSetAndAPlainRequestHasNone() {
        var request = TransferRequest(url: "https://example.com/a", sink: .memory(limit: 16))
        #expect(request.bodyFile == nil && !request.appendsAtServerSize && request.signing == nil)
        #expect(!request.keepsResponseHeaders && request.remoteFileHeld == nil)

        let range = TransferRequest.FileRange(path: "/data/a.bin", offset: 5, length: 10)
        let signing = TransferRequest.AWSSigning(region: "us-east-1", accessKeyID: "AK", secretAccessKey: "SK")
        request.bodyFile = range
        request.appendsAtServerSize = true
        request.signing = signing
        request.keepsResponseHeaders = true
        request.remoteFileHeld = "\"10-1700000000\""
        #expect(request.bodyFile == range && request.appendsAtServerSize && request.signing == signing)
        #expect(request.keepsResponseHeaders && request.remoteFileHeld == "\"10-1700000000\"")
    }

    @Test func aChangedCopyLeavesTheOriginalAsItWas() {
        var original = TransferRequest(url: "sftp://example.com/a", sink: .memory(limit: 16))
        original.remoteFileHeld = "\"1-2\""
        var copy = original
        copy.remoteFileHeld = nil
        copy.appendsAtServerSize = true
        #expect(original.remoteFileHeld == "\"1-2\"" && !original.appendsAtServerSize)
        #expect(copy.remoteFileHeld == nil && copy.appendsAtServerSize)
    }
}
