import Testing
@testable import Transfer

/// The request each operation sends: method, URL and canonical query, exactly the headers S3
/// needs, body, signing and limits.
@Suite struct ObjectStorageRequestTests {
    private let requests = S3Fixture.requests()
    private let objectURL = "http://127.0.0.1:9000/media/jobs/42/movie%20%28final%29.mkv"

    /// What every request shares, whatever the operation.
    private func expectCommon(_ request: TransferRequest) {
        #expect(request.signing?.region == "eu-west-1")
        #expect(request.signing?.service == "s3")
        #expect(request.signing?.accessKeyID == "AKIAIOSFODNN7EXAMPLE")
        #expect(request.signing?.secretAccessKey == S3Fixture.secret)
        #expect(request.keepsResponseHeaders)
        #expect(!request.followRedirects)
        #expect(request.addressPolicy.allowPrivate)
        #expect(request.memoryLimit == 64 << 10)
        #expect(request.stallTimeout == 30)
        #expect(request.connectTimeout == TransferRequest(url: "", sink: .memory(limit: 1)).connectTimeout)
        #expect(request.maxBytes == nil)
    }

    @Test func createMultipartUploadPostsToUploadsWithTheObjectsType() throws {
        let request = try requests.createMultipartUpload(S3Fixture.location, contentType: "video/x-matroska")
        expectCommon(request)
        #expect(request.method == .post)
        #expect(request.url == objectURL + "?uploads=")
        #expect(request.headerLines == ["x-amz-content-sha256: \(S3Fixture.emptySHA256)", "Content-Type: video/x-matroska"])
        #expect(request.body.isEmpty)
        #expect(request.bodyFile == nil)
    }

    @Test func uploadPartPutsTheFileRangeWithItsDigest() throws {
        let request = try requests.uploadPart(S3Fixture.location, uploadID: "VXBsb2Fk+SUQ=/x", number: 7,
                                              body: S3Fixture.range, sha256: S3Fixture.bodySHA256)
        expectCommon(request)
        #expect(request.method == .put)
        #expect(request.url == objectURL + "?partNumber=7&uploadId=VXBsb2Fk%2BSUQ%3D%2Fx")
        #expect(request.headerLines == ["x-amz-content-sha256: \(S3Fixture.bodySHA256)"])
        #expect(request.bodyFile == S3Fixture.range)
        #expect(request.body.isEmpty)
    }

    @Test func uploadPartRefusesWhatS3WouldRefuse() {
        for number in [0, 10_001] {
            #expect(throws: ObjectStorageFailure.self) {
                try requests.uploadPart(S3Fixture.location, uploadID: "u", number: number, body: S3Fixture.range,
                                        sha256: S3Fixture.bodySHA256)
            }
        }
        #expect(throws: ObjectStorageFailure.refused(status: 0, code: "InvalidArgument", message: "the upload id is empty")) {
            try requests.uploadPart(S3Fixture.location, uploadID: "", number: 1, body: S3Fixture.range, sha256: S3Fixture.bodySHA256)
        }
        #expect(throws: ObjectStorageFailure.self) { try requests.abortMultipartUpload(S3Fixture.location, uploadID: "") }
        for digest in ["", "abc", S3Fixture.bodySHA256.uppercased(), String(S3Fixture.bodySHA256.dropLast()) + "g"] {
            #expect(throws: ObjectStorageFailure.self) {
                try requests.uploadPart(S3Fixture.location, uploadID: "u", number: 1, body: S3Fixture.range, sha256: digest)
            }
        }
    }

    @Test func completeSendsTheListAsSignedXML() throws {
        let parts = [UploadedPart(number: 2, size: 4, etag: "\"7aea2552dfe7eb84b9443b6fc9ba6e01\""),
                     UploadedPart(number: 1, size: 5 << 20, etag: "\"4593f81bd2db09f467e3fdd2add670c9\"")]
        let request = try requests.completeMultipartUpload(S3Fixture.location, uploadID: "abc", parts: parts, ifNoneMatch: false)
        expectCommon(request)
        #expect(request.method == .post)
        #expect(request.url == objectURL + "?uploadId=abc")
        #expect(request.body == CompleteMultipartUploadBody.xml(parts))
        #expect(request.headerLines == ["x-amz-content-sha256: \(S3Requests.sha256Hex(request.body))",
                                        "Content-Type: application/xml"])
        #expect(S3Requests.sha256Hex(Array("hello".utf8)) == S3Fixture.bodySHA256)
    }

    @Test func aConditionalCompleteOrPutAsksForNoExistingObject() throws {
        let parts = [UploadedPart(number: 1, size: 1, etag: "\"e\"")]
        let complete = try requests.completeMultipartUpload(S3Fixture.location, uploadID: "abc", parts: parts, ifNoneMatch: true)
        #expect(complete.headerLines.last == "If-None-Match: *")
        let put = try requests.putObject(S3Fixture.location, body: S3Fixture.range, sha256: S3Fixture.bodySHA256,
                                         ifNoneMatch: true, contentType: "text/plain")
        #expect(put.headerLines == ["x-amz-content-sha256: \(S3Fixture.bodySHA256)", "Content-Type: text/plain", "If-None-Match: *"])
        let plain = try requests.putObject(S3Fixture.location, body: S3Fixture.range, sha256: S3Fixture.bodySHA256,
                                           ifNoneMatch: false, contentType: "text/plain")
        #expect(!plain.headerLines.contains("If-None-Match: *"))
    }

    @Test func completeNeedsAPart() {
        #expect(throws: ObjectStorageFailure.self) {
            try requests.completeMultipartUpload(S3Fixture.location, uploadID: "abc", parts: [], ifNoneMatch: false)
        }
    }

    @Test func theCompleteBodyListsPartsInOrderWithTheirETagsEscaped() {
        let xml = CompleteMultipartUploadBody.xml([
            UploadedPart(number: 10, size: 1, etag: "\"b<&>\""),
            UploadedPart(number: 2, size: 1, etag: "\"a\""),
        ])
        #expect(String(decoding: xml, as: UTF8.self) == """
            <CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">\
            <Part><PartNumber>2</PartNumber><ETag>"a"</ETag></Part>\
            <Part><PartNumber>10</PartNumber><ETag>"b&lt;&amp;&gt;"</ETag></Part>\
            </CompleteMultipartUpload>
            """)
    }

    @Test func putObjectPutsTheFileRangeWithoutAQuery() throws {
        let request = try requests.putObject(S3Fixture.location, body: S3Fixture.range, sha256: S3Fixture.bodySHA256,
                                             ifNoneMatch: false, contentType: ObjectStorageClient.defaultContentType)
        expectCommon(request)
        #expect(request.method == .put)
        #expect(request.url == objectURL)
        #expect(request.headerLines == ["x-amz-content-sha256: \(S3Fixture.bodySHA256)", "Content-Type: application/octet-stream"])
        #expect(request.bodyFile == S3Fixture.range)
    }

    @Test func abortAndHeadSendNoBodyAndTheEmptyDigest() throws {
        let abort = try requests.abortMultipartUpload(S3Fixture.location, uploadID: "a b")
        expectCommon(abort)
        #expect(abort.method == .delete)
        #expect(abort.url == objectURL + "?uploadId=a%20b")
        #expect(abort.headerLines == ["x-amz-content-sha256: \(S3Fixture.emptySHA256)"])
        #expect(abort.body.isEmpty && abort.bodyFile == nil)

        let head = try requests.headObject(S3Fixture.location)
        expectCommon(head)
        #expect(head.method == .head)
        #expect(head.url == objectURL)
        #expect(head.headerLines == ["x-amz-content-sha256: \(S3Fixture.emptySHA256)"])
    }

    /// ListMultipartUploads asks the bucket, the key only as the prefix of what it lists.
    @Test func listingTheUploadsOfAKeyAsksTheBucketWithTheKeyAsPrefix() throws {
        let list = try requests.listMultipartUploads(S3Fixture.location)
        expectCommon(list)
        #expect(list.method == .get)
        #expect(list.url == "http://127.0.0.1:9000/media/?prefix=jobs%2F42%2Fmovie%20%28final%29.mkv&uploads=")
        #expect(list.headerLines == ["x-amz-content-sha256: \(S3Fixture.emptySHA256)"])
        let virtual = try S3Fixture.requests("https://s3.eu-west-1.amazonaws.com", addressing: .virtual)
            .listMultipartUploads(S3Fixture.location)
        #expect(virtual.url == "https://media.s3.eu-west-1.amazonaws.com/?prefix=jobs%2F42%2Fmovie%20%28final%29.mkv&uploads=")
    }

    @Test func virtualAddressingChangesOnlyTheURL() throws {
        let requests = S3Fixture.requests("https://s3.eu-west-1.amazonaws.com", addressing: .virtual)
        let request = try requests.uploadPart(S3Fixture.location, uploadID: "u", number: 1, body: S3Fixture.range,
                                              sha256: S3Fixture.bodySHA256)
        #expect(request.url == "https://media.s3.eu-west-1.amazonaws.com/jobs/42/movie%20%28final%29.mkv?partNumber=1&uploadId=u")
        #expect(request.headerLines == ["x-amz-content-sha256: \(S3Fixture.bodySHA256)"])
    }

    @Test func aHeaderValueThatCouldNotBeSentIsRefused() {
        #expect(throws: ObjectStorageFailure.self) {
            try requests.createMultipartUpload(S3Fixture.location, contentType: "text/plain\r\nX-Evil: 1")
        }
        #expect(throws: ObjectStorageFailure.self) {
            try requests.createMultipartUpload(S3Fixture.location, contentType: "")
        }
    }
}
