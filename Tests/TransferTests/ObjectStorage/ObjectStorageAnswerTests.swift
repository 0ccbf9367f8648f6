import Testing
@testable import Transfer

/// S3's answers read: the XML documents, each failure's class, and the values of a success.
@Suite struct ObjectStorageAnswerTests {
    private let redaction = S3MessageRedaction(secretAccessKey: S3Fixture.secret)

    private func read(_ result: TransferResult, _ operation: S3Operation) -> S3Answer {
        S3Answer(result, for: operation, redaction: redaction)
    }

    // Samples from the Amazon S3 API reference.
    static let initiated = """
        <?xml version="1.0" encoding="UTF-8"?>
        <InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
          <Bucket>example-bucket</Bucket>
          <Key>example-object</Key>
          <UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>
        </InitiateMultipartUploadResult>
        """
    static let completed = """
        <?xml version="1.0" encoding="UTF-8"?>
        <CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
          <Location>http://Example-Bucket.s3.us-east-1.amazonaws.com/Example-Object</Location>
          <Bucket>Example-Bucket</Bucket>
          <Key>Example-Object</Key>
          <ETag>&quot;3858f62230ac3c915f300c664312c11f-9&quot;</ETag>
        </CompleteMultipartUploadResult>
        """

    @Test func theInitiateResultGivesTheUploadID() {
        let document = S3XMLDocument.parse(Array(Self.initiated.utf8))
        #expect(document?.root == "InitiateMultipartUploadResult")
        #expect(document?.fields["Bucket"] == "example-bucket")
        let answer = read(S3Fixture.answer(200, Self.initiated), .createMultipartUpload)
        #expect(answer.uploadID() == .success("VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"))
    }

    @Test func theCompleteResultGivesTheQuotedETagAndTheVersionHeader() {
        let answer = read(S3Fixture.answer(200, Self.completed, headers: [("x-amz-version-id", "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY")]),
                          .completeMultipartUpload)
        #expect(answer.storedObject() == .success(StoredObject(etag: "\"3858f62230ac3c915f300c664312c11f-9\"",
                                                               versionID: "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY")))
        // moto names the root …Response and leaves the quotes as they are.
        let moto = #"<?xml version="1.0" encoding="utf-8"?><CompleteMultipartUploadResponse xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>b</Bucket><ETag>"59c1-2"</ETag></CompleteMultipartUploadResponse>"#
        #expect(read(S3Fixture.answer(200, moto), .completeMultipartUpload).storedObject() == .success(StoredObject(etag: "\"59c1-2\"")))
    }

    @Test func theListedPartsAreReadInOrderBesideTheOtherRecords() {
        // As moto answers (S3 names the root ListPartsResult).
        let listed = #"<?xml version="1.0" encoding="utf-8"?><ListPartsResponse xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>b</Bucket><UploadId>u1</UploadId><IsTruncated>false</IsTruncated><Part><PartNumber>2</PartNumber><ETag>"e2"</ETag><Size>10</Size></Part><Part><PartNumber>1</PartNumber><LastModified>2026-12-05T05:30:20.000Z</LastModified><ETag>"e1"</ETag><Size>5242880</Size></Part><Owner><DisplayName>webfile</DisplayName><ID>75aa</ID></Owner></ListPartsResponse>"#
        let document = S3XMLDocument.parse(Array(listed.utf8))
        #expect(document?.fields["UploadId"] == "u1" && document?.records["Owner"] == [["DisplayName": "webfile", "ID": "75aa"]])
        #expect(read(S3Fixture.answer(200, listed), .listParts).listedParts()
                == .success([UploadedPart(number: 1, size: 5_242_880, etag: "\"e1\""), UploadedPart(number: 2, size: 10, etag: "\"e2\"")]))
        let partless = #"<ListPartsResult><Part><PartNumber>1</PartNumber></Part></ListPartsResult>"#
        #expect(read(S3Fixture.answer(200, partless), .listParts).listedParts()
                == .failure(.unavailable("a part without its number, size or ETag in the answer (HTTP 200)")))
        #expect(read(S3Fixture.answer(404, S3Fixture.error("NoSuchUpload", "gone")), .listParts).listedParts() == .failure(.noSuchUpload))
    }

    /// The listing is by prefix: only uploads of the key itself are its own.
    @Test func theListedUploadsOfAKeyAreThoseOfThatKeyAlone() {
        // As S3 answers (moto's names the same root), an upload's owner and initiator nested in it.
        let listed = #"<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>media</Bucket><Prefix>a.bin</Prefix><IsTruncated>false</IsTruncated><Upload><Key>a.bin</Key><UploadId>u1</UploadId><Initiator><ID>arn:aws:iam::1:user/u</ID></Initiator><Initiated>2026-12-07T14:00:00.000Z</Initiated></Upload><Upload><Key>a.bin.old</Key><UploadId>u2</UploadId></Upload><Upload><Key>a.bin</Key><UploadId>u3</UploadId></Upload></ListMultipartUploadsResult>"#
        #expect(read(S3Fixture.answer(200, listed), .listMultipartUploads).listedUploads(of: "a.bin") == .success(["u1", "u3"]))
        let none = #"<ListMultipartUploadsResult><Bucket>media</Bucket><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>"#
        #expect(read(S3Fixture.answer(200, none), .listMultipartUploads).listedUploads(of: "a.bin") == .success([]))
        let idless = #"<ListMultipartUploadsResult><Upload><Key>a.bin</Key></Upload></ListMultipartUploadsResult>"#
        #expect(read(S3Fixture.answer(200, idless), .listMultipartUploads).listedUploads(of: "a.bin")
                == .failure(.unavailable("an upload without its id in the answer (HTTP 200)")))
        #expect(read(S3Fixture.answer(403, S3Fixture.error("AccessDenied", "no")), .listMultipartUploads).listedUploads(of: "a.bin")
                == .failure(.refused(status: 403, code: "AccessDenied", message: "no")))
    }

    @Test func aCompleteAnswered200WithAnErrorFails() {
        let internalError = S3Fixture.error("InternalError", "We encountered an internal error. Please try again.")
        // S3 may send white space ahead while it assembles the object.
        let answer = read(S3Fixture.answer(200, "\n   \n" + internalError), .completeMultipartUpload)
        #expect(answer.storedObject().failure == .unavailable("InternalError (HTTP 200): We encountered an internal error. Please try again."))
        let invalid = read(S3Fixture.answer(200, S3Fixture.error("InvalidPart", "One or more of the specified parts could not be found.")),
                           .completeMultipartUpload)
        #expect(invalid.storedObject().failure == .refused(status: 200, code: "InvalidPart",
                                                           message: "One or more of the specified parts could not be found."))
    }

    @Test func aSuccessWithoutWhatItShouldCarryIsNotTakenForOne() {
        #expect(read(S3Fixture.answer(200, ""), .completeMultipartUpload).storedObject().failure?.isUnavailable == true)
        #expect(read(S3Fixture.answer(200, "<html>proxy</html"), .createMultipartUpload).uploadID().failure?.isUnavailable == true)
        #expect(read(S3Fixture.answer(200), .uploadPart).uploadedPart(number: 1, size: 1).failure?.isUnavailable == true)
        #expect(read(S3Fixture.answer(200, headers: [("ETag", "")]), .putObject).storedObject().failure?.isUnavailable == true)
    }

    @Test func aPartsAndAPutsETagIsTheHeaderAsSent() {
        let headers = [("ETag", "\"7aea2552dfe7eb84b9443b6fc9ba6e01\""), ("x-amz-version-id", "v2")]
        #expect(read(S3Fixture.answer(200, headers: headers), .uploadPart).uploadedPart(number: 3, size: 99)
            == .success(UploadedPart(number: 3, size: 99, etag: "\"7aea2552dfe7eb84b9443b6fc9ba6e01\"")))
        #expect(read(S3Fixture.answer(200, headers: headers), .putObject).storedObject()
            == .success(StoredObject(etag: "\"7aea2552dfe7eb84b9443b6fc9ba6e01\"", versionID: "v2")))
    }

    @Test func anErrorDocumentGivesItsCodeAndMessage() {
        let document = S3XMLDocument.parse(Array(S3Fixture.error("NoSuchBucket", "The specified bucket does not exist").utf8))
        #expect(document?.isError == true)
        #expect(document?.fields["Code"] == "NoSuchBucket")
        #expect(document?.fields["Message"] == "The specified bucket does not exist")
        #expect(S3XMLDocument.parse([]) == nil)
        #expect(S3XMLDocument.parse(Array("<Error><Code>x</Error>".utf8)) == nil)
    }

    @Test func anExternalEntityIsNotResolved() {
        let xml = """
            <?xml version="1.0"?><!DOCTYPE Error [<!ENTITY x SYSTEM "file:///etc/passwd">]>\
            <Error><Code>AccessDenied</Code><Message>&x;</Message></Error>
            """
        let message = S3XMLDocument.parse(Array(xml.utf8))?.fields["Message"] ?? ""
        #expect(!message.contains("root:"))
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var result: TransferResult
        var operation: S3Operation = .putObject
        var expected: ObjectStorageFailure?
        var testDescription: String { "\(result.httpStatus.map(String.init) ?? "-") \(result.failure.map { "\($0)" } ?? "") \(operation)" }
    }

    static let rows: [Row] = [
        Row(result: TransferResult(failure: .unreachable("connect refused")), expected: .unreachable("connect refused")),
        Row(result: TransferResult(failure: .proxy("407")), expected: .unreachable("proxy: 407")),
        Row(result: TransferResult(failure: .network("connection reset")), expected: .unavailable("network: connection reset")),
        Row(result: TransferResult(failure: .timeout("stalled")), expected: .unavailable("timeout: stalled")),
        Row(result: TransferResult(failure: .tls("handshake")), expected: .unavailable("TLS: handshake")),
        Row(result: TransferResult(), expected: .unavailable("no response")),
        Row(result: S3Fixture.answer(200), expected: nil),
        Row(result: S3Fixture.answer(204), operation: .abortMultipartUpload, expected: nil),
        Row(result: S3Fixture.answer(412, S3Fixture.error("PreconditionFailed", "At least one of the pre-conditions you specified did not hold")),
            expected: .exists),
        Row(result: S3Fixture.answer(412), operation: .completeMultipartUpload, expected: .exists),
        Row(result: S3Fixture.answer(404, S3Fixture.error("NoSuchUpload", "The specified upload does not exist.")),
            operation: .uploadPart, expected: .noSuchUpload),
        Row(result: S3Fixture.answer(409, S3Fixture.error("ConditionalRequestConflict", "A conflicting operation occurred.")),
            operation: .completeMultipartUpload, expected: .noSuchUpload),
        Row(result: S3Fixture.answer(409, S3Fixture.error("ConditionalRequestConflict", "A conflicting operation occurred.")),
            expected: .unavailable("ConditionalRequestConflict (HTTP 409): A conflicting operation occurred.")),
        Row(result: S3Fixture.answer(503, S3Fixture.error("SlowDown", "Please reduce your request rate.")),
            expected: .unavailable("SlowDown (HTTP 503): Please reduce your request rate.")),
        Row(result: S3Fixture.answer(500, S3Fixture.error("InternalError", "We encountered an internal error.")),
            expected: .unavailable("InternalError (HTTP 500): We encountered an internal error.")),
        Row(result: S3Fixture.answer(502, "<html>Bad Gateway</html>"), expected: .unavailable("HTTP502 (HTTP 502): HTTP 502")),
        Row(result: S3Fixture.answer(429), expected: .unavailable("SlowDown (HTTP 429): HTTP 429")),
        Row(result: S3Fixture.answer(400, S3Fixture.error("RequestTimeout", "Your socket connection to the server was not read from or written to within the timeout period.")),
            operation: .uploadPart,
            expected: .unavailable("RequestTimeout (HTTP 400): Your socket connection to the server was not read from or written to within the timeout period.")),
        Row(result: S3Fixture.answer(403, S3Fixture.error("AccessDenied", "Access Denied")),
            expected: .refused(status: 403, code: "AccessDenied", message: "Access Denied")),
        Row(result: S3Fixture.answer(403, S3Fixture.error("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")),
            expected: .refused(status: 403, code: "InvalidAccessKeyId", message: "The AWS Access Key Id you provided does not exist in our records.")),
        Row(result: S3Fixture.answer(404, S3Fixture.error("NoSuchBucket", "The specified bucket does not exist")),
            operation: .createMultipartUpload,
            expected: .refused(status: 404, code: "NoSuchBucket", message: "The specified bucket does not exist")),
        Row(result: S3Fixture.answer(400, S3Fixture.error("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.")),
            operation: .completeMultipartUpload,
            expected: .refused(status: 400, code: "EntityTooSmall", message: "Your proposed upload is smaller than the minimum allowed object size.")),
        Row(result: S3Fixture.answer(400, S3Fixture.error("InvalidPart", "One or more of the specified parts could not be found.")),
            operation: .completeMultipartUpload,
            expected: .refused(status: 400, code: "InvalidPart", message: "One or more of the specified parts could not be found.")),
        Row(result: S3Fixture.answer(301, S3Fixture.error("PermanentRedirect", "The bucket you are attempting to access must be addressed using the specified endpoint.")),
            expected: .refused(status: 301, code: "PermanentRedirect",
                               message: "The bucket you are attempting to access must be addressed using the specified endpoint.")),
        Row(result: S3Fixture.answer(403), operation: .headObject, expected: .refused(status: 403, code: "AccessDenied", message: "HTTP 403")),
    ]

    @Test(arguments: rows)
    func everyAnswerHasItsClass(_ row: Row) {
        #expect(read(row.result, row.operation).failure == row.expected)
    }

    @Test func headTellsAnObjectFromNone() {
        #expect(read(S3Fixture.answer(200), .headObject).exists() == .success(true))
        #expect(read(S3Fixture.answer(404), .headObject).exists() == .success(false))
        #expect(read(S3Fixture.answer(503), .headObject).exists().failure?.isUnavailable == true)
        #expect(read(TransferResult(failure: .unreachable("refused")), .headObject).exists() == .failure(.unreachable("refused")))
    }

    @Test func abortTakesAnUploadAlreadyGoneForDone() {
        let gone = S3Fixture.answer(404, S3Fixture.error("NoSuchUpload", "The specified upload does not exist."))
        #expect(read(gone, .abortMultipartUpload).aborted().failure == nil)
        #expect(read(S3Fixture.answer(204), .abortMultipartUpload).aborted().failure == nil)
        #expect(read(S3Fixture.answer(403, S3Fixture.error("AccessDenied", "Access Denied")), .abortMultipartUpload).aborted().failure
            == .refused(status: 403, code: "AccessDenied", message: "Access Denied"))
    }

    @Test func noMessageCarriesTheSecretOrASignature() {
        let echoed = S3Fixture.error("SignatureDoesNotMatch", "Bad key \(S3Fixture.secret) in Authorization: AWS4-HMAC-SHA256 "
            + "Credential=AKIAIOSFODNN7EXAMPLE/20260101/eu-west-1/s3/aws4_request, Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024")
        let refused = read(S3Fixture.answer(403, echoed), .putObject).failure
        guard case .refused(403, "SignatureDoesNotMatch", let message)? = refused else {
            Issue.record("not a refusal: \(String(describing: refused))")
            return
        }
        #expect(message.hasPrefix("Bad key [secret] in Authorization: "))
        #expect(!message.contains(S3Fixture.secret))
        #expect(!message.contains("Signature="))
        #expect(!message.contains("fe5f80f7"))

        let network = read(TransferResult(failure: .network("reset after \(S3Fixture.secret)")), .uploadPart).failure
        #expect(network == .unavailable("network: reset after [secret]"))
        let long = read(S3Fixture.answer(400, S3Fixture.error("X", String(repeating: "m", count: 5000))), .putObject).failure
        guard case .refused(400, "X", let longMessage)? = long else {
            Issue.record("not a refusal: \(String(describing: long))")
            return
        }
        #expect(longMessage.count == S3MessageRedaction.maximumLength + 1)
    }
}

extension ObjectStorageFailure {
    var isUnavailable: Bool {
        if case .unavailable = self { return true }
        return false
    }
}
