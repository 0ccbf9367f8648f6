import Crypto

/// The S3 operations the client performs, one request each.
enum S3Operation: Sendable {
    case createMultipartUpload, uploadPart, completeMultipartUpload, abortMultipartUpload, listParts, listMultipartUploads
    case putObject, headObject
}

/// The engine request for each S3 operation: URL with its canonical query, the headers S3 needs
/// (each of them signed by libcurl), the body, and signing with the configured key pair.
///
/// libcurl 7.88 signs the URL's path and query exactly as written, so both are written in
/// SigV4's canonical form here; and it takes `x-amz-content-sha256`, when the request carries
/// it, as the payload's hash (without it a body read from a file would be signed as empty, and
/// S3 requires the header anyway).
struct S3Requests: Sendable {
    let settings: ObjectStorageSettings
    /// The endpoint, or why no request can be made with these settings.
    private let endpoint: Result<S3Endpoint, ObjectStorageFailure>

    init(settings: ObjectStorageSettings) {
        self.settings = settings
        if let problem = settings.problem {
            endpoint = .failure(.refused(status: 0, code: "InvalidSettings", message: problem))
        } else {
            endpoint = S3Endpoint.parse(settings.endpoint)
                .mapError { .refused(status: 0, code: "InvalidSettings", message: $0.message) }
        }
    }

    /// Hex SHA-256 of nothing: `x-amz-content-sha256` of a bodiless request.
    static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// S3's answers are small XML documents (or nothing).
    static let answerLimit = 64 << 10
    static let stallTimeout: Double = 30
    static let partNumbers = 1...10_000

    func createMultipartUpload(_ at: ObjectLocation, contentType: String) throws(ObjectStorageFailure) -> TransferRequest {
        try checkContentType(contentType)
        // Content-Type set here becomes the object's; without it curl would send its form type.
        return try request(.post, at, query: S3Query([("uploads", "")]),
                           headers: [("x-amz-content-sha256", Self.emptySHA256), ("Content-Type", contentType)])
    }

    func uploadPart(_ at: ObjectLocation, uploadID: String, number: Int, body: TransferRequest.FileRange,
                    sha256: String) throws(ObjectStorageFailure) -> TransferRequest {
        guard Self.partNumbers.contains(number) else {
            throw .refused(status: 0, code: "InvalidArgument", message: "part number \(number) is not within 1...10000")
        }
        try checkDigest(sha256)
        try checkUploadID(uploadID)
        var request = try request(.put, at, query: S3Query([("partNumber", String(number)), ("uploadId", uploadID)]),
                                  headers: [("x-amz-content-sha256", sha256)])
        request.bodyFile = body
        return request
    }

    func completeMultipartUpload(_ at: ObjectLocation, uploadID: String, parts: [UploadedPart],
                                 ifNoneMatch: Bool) throws(ObjectStorageFailure) -> TransferRequest {
        try checkUploadID(uploadID)
        guard !parts.isEmpty else {
            throw .refused(status: 0, code: "InvalidArgument", message: "a multipart upload needs at least one part")
        }
        let body = CompleteMultipartUploadBody.xml(parts)
        var headers = [("x-amz-content-sha256", Self.sha256Hex(body)), ("Content-Type", "application/xml")]
        if ifNoneMatch { headers.append(("If-None-Match", "*")) }
        var request = try request(.post, at, query: S3Query([("uploadId", uploadID)]), headers: headers)
        request.body = body
        return request
    }

    func abortMultipartUpload(_ at: ObjectLocation, uploadID: String) throws(ObjectStorageFailure) -> TransferRequest {
        try checkUploadID(uploadID)
        return try request(.delete, at, query: S3Query([("uploadId", uploadID)]), headers: [("x-amz-content-sha256", Self.emptySHA256)])
    }

    /// The parts S3 holds of the upload, up to `maxListedParts` of them.
    func listParts(_ at: ObjectLocation, uploadID: String) throws(ObjectStorageFailure) -> TransferRequest {
        try checkUploadID(uploadID)
        return try request(.get, at, query: S3Query([("max-parts", String(Self.maxListedParts)), ("uploadId", uploadID)]),
                           headers: [("x-amz-content-sha256", Self.emptySHA256)])
    }

    /// The parts one ListParts answer lists at most (S3's own limit).
    static let maxListedParts = 1000

    /// The bucket's multipart uploads of keys that begin with `at.key`, up to 1,000 of them.
    func listMultipartUploads(_ at: ObjectLocation) throws(ObjectStorageFailure) -> TransferRequest {
        try request(.get, at, query: S3Query([("prefix", at.key), ("uploads", "")]), headers: [("x-amz-content-sha256", Self.emptySHA256)],
                    ofBucket: true)
    }

    func putObject(_ at: ObjectLocation, body: TransferRequest.FileRange, sha256: String, ifNoneMatch: Bool,
                   contentType: String) throws(ObjectStorageFailure) -> TransferRequest {
        try checkDigest(sha256)
        try checkContentType(contentType)
        var headers = [("x-amz-content-sha256", sha256), ("Content-Type", contentType)]
        if ifNoneMatch { headers.append(("If-None-Match", "*")) }
        var request = try request(.put, at, query: S3Query(), headers: headers)
        request.bodyFile = body
        return request
    }

    func headObject(_ at: ObjectLocation) throws(ObjectStorageFailure) -> TransferRequest {
        try request(.head, at, query: S3Query(), headers: [("x-amz-content-sha256", Self.emptySHA256)])
    }

    /// `ofBucket`: a request of the bucket (its URL without the key), `at.key` only its query's.
    private func request(_ method: TransferRequest.Method, _ at: ObjectLocation, query: S3Query,
                         headers: [(String, String)], ofBucket: Bool = false) throws(ObjectStorageFailure) -> TransferRequest {
        let endpoint = try endpoint.get()
        var url = try (ofBucket ? endpoint.url(ofBucket: at.bucket, addressing: settings.addressing)
                                : endpoint.url(for: at, addressing: settings.addressing)).get()
        let canonical = query.canonical
        if !canonical.isEmpty { url += "?" + canonical }

        var request = TransferRequest(url: url, sink: .memory(limit: Self.answerLimit))
        request.method = method
        request.headers = headers
        request.signing = TransferRequest.AWSSigning(region: settings.region, service: "s3",
                                                     accessKeyID: settings.accessKeyID,
                                                     secretAccessKey: settings.secretAccessKey)
        request.keepsResponseHeaders = true
        // S3's redirects name another region or endpoint; following one would resend the signed request there.
        request.followRedirects = false
        // The configured endpoint is trusted like a proxy, loopback and private addresses included.
        request.addressPolicy = .allowAll
        request.stallTimeout = Self.stallTimeout
        return request
    }

    /// libcurl signs the header as the payload's hash, and S3 checks the body against it.
    private func checkDigest(_ sha256: String) throws(ObjectStorageFailure) {
        guard sha256.utf8.count == 64, sha256.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw .refused(status: 0, code: "InvalidDigest", message: "the body's SHA-256 must be 64 lower-case hex digits")
        }
    }

    private func checkUploadID(_ uploadID: String) throws(ObjectStorageFailure) {
        guard !uploadID.isEmpty else { throw .refused(status: 0, code: "InvalidArgument", message: "the upload id is empty") }
    }

    private func checkContentType(_ contentType: String) throws(ObjectStorageFailure) {
        guard !contentType.isEmpty, contentType.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) }) else {
            throw .refused(status: 0, code: "InvalidArgument", message: "the content type must be printable ASCII")
        }
    }

    static func sha256Hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        for byte in SHA256.hash(data: bytes) {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
    }
}
