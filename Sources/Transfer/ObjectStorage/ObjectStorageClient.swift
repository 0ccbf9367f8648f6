/// S3 operations for storing a file in a bucket, whole or as a multipart upload, each one signed
/// request through the transfer engine. Each completion is called once, on whatever thread `run`
/// reports on; an operation refused before sending (status 0) completes before returning.
public final class ObjectStorageClient: Sendable {
    /// Starts a request and reports its result once (the service passes the engine's `start`).
    public typealias Run = @Sendable (TransferRequest, @escaping @Sendable (TransferResult) -> Void) -> Void

    /// The object's type when the caller names none (S3's own default is `binary/octet-stream`).
    public static let defaultContentType = "application/octet-stream"

    private let requests: S3Requests
    private let redaction: S3MessageRedaction
    private let run: Run

    public init(settings: ObjectStorageSettings, run: @escaping Run) {
        self.requests = S3Requests(settings: settings)
        self.redaction = S3MessageRedaction(secretAccessKey: settings.secretAccessKey)
        self.run = run
    }

    /// Starts a multipart upload; the result is its UploadId. `contentType` becomes the object's.
    public func createMultipartUpload(_ at: ObjectLocation, contentType: String = defaultContentType,
                                      completion: @escaping @Sendable (Result<String, ObjectStorageFailure>) -> Void) {
        perform(.createMultipartUpload, { s3 throws(ObjectStorageFailure) in
            try s3.createMultipartUpload(at, contentType: contentType)
        }, completion) { $0.uploadID() }
    }

    /// Sends part `number` (1...10000) of the upload from `body`, whose hex SHA-256 is `sha256`, at
    /// most `bytesPerSecond` fast (an upload job's cap).
    public func uploadPart(_ at: ObjectLocation, uploadID: String, number: Int, body: TransferRequest.FileRange, sha256: String,
                           bytesPerSecond: Int64? = nil,
                           completion: @escaping @Sendable (Result<UploadedPart, ObjectStorageFailure>) -> Void) {
        perform(.uploadPart, { s3 throws(ObjectStorageFailure) in
            var request = try s3.uploadPart(at, uploadID: uploadID, number: number, body: body, sha256: sha256)
            request.maxSpeedBytesPerSecond = bytesPerSecond
            return request
        }, completion) { $0.uploadedPart(number: number, size: body.length) }
    }

    /// Makes the object of the parts. With `ifNoneMatch`, only if no object is at the key yet
    /// (else `.exists`).
    public func completeMultipartUpload(_ at: ObjectLocation, uploadID: String, parts: [UploadedPart], ifNoneMatch: Bool,
                                        completion: @escaping @Sendable (Result<StoredObject, ObjectStorageFailure>) -> Void) {
        perform(.completeMultipartUpload, { s3 throws(ObjectStorageFailure) in
            try s3.completeMultipartUpload(at, uploadID: uploadID, parts: parts, ifNoneMatch: ifNoneMatch)
        }, completion) { $0.storedObject() }
    }

    /// Drops the upload and its parts; an upload already gone counts as aborted.
    public func abortMultipartUpload(_ at: ObjectLocation, uploadID: String,
                                     completion: @escaping @Sendable (Result<Void, ObjectStorageFailure>) -> Void) {
        perform(.abortMultipartUpload, { s3 throws(ObjectStorageFailure) in
            try s3.abortMultipartUpload(at, uploadID: uploadID)
        }, completion) { $0.aborted() }
    }

    /// The parts S3 holds of the upload (the first 1,000); `.noSuchUpload` when it has none.
    public func listParts(_ at: ObjectLocation, uploadID: String,
                          completion: @escaping @Sendable (Result<[UploadedPart], ObjectStorageFailure>) -> Void) {
        perform(.listParts, { s3 throws(ObjectStorageFailure) in
            try s3.listParts(at, uploadID: uploadID)
        }, completion) { $0.listedParts() }
    }

    /// The ids of the multipart uploads of exactly this key that the bucket holds (the first 1,000
    /// of its keys beginning so).
    public func listMultipartUploads(_ at: ObjectLocation,
                                     completion: @escaping @Sendable (Result<[String], ObjectStorageFailure>) -> Void) {
        perform(.listMultipartUploads, { s3 throws(ObjectStorageFailure) in
            try s3.listMultipartUploads(at)
        }, completion) { $0.listedUploads(of: at.key) }
    }

    /// Stores `body` (hex SHA-256 `sha256`) as the object in one request. With `ifNoneMatch`, only
    /// if no object is at the key yet (else `.exists`).
    public func putObject(_ at: ObjectLocation, body: TransferRequest.FileRange, sha256: String, ifNoneMatch: Bool,
                          contentType: String = defaultContentType,
                          completion: @escaping @Sendable (Result<StoredObject, ObjectStorageFailure>) -> Void) {
        perform(.putObject, { s3 throws(ObjectStorageFailure) in
            try s3.putObject(at, body: body, sha256: sha256, ifNoneMatch: ifNoneMatch, contentType: contentType)
        }, completion) { $0.storedObject() }
    }

    /// Whether an object is at the key (HEAD: 200 yes, 404 no; a missing bucket also answers 404).
    public func objectExists(_ at: ObjectLocation, completion: @escaping @Sendable (Result<Bool, ObjectStorageFailure>) -> Void) {
        perform(.headObject, { s3 throws(ObjectStorageFailure) in try s3.headObject(at) }, completion) { $0.exists() }
    }

    /// The object at the key, nil when there is none (HEAD; a missing bucket also answers 404).
    public func headObject(_ at: ObjectLocation, completion: @escaping @Sendable (Result<StoredObject?, ObjectStorageFailure>) -> Void) {
        perform(.headObject, { s3 throws(ObjectStorageFailure) in try s3.headObject(at) }, completion) { $0.headObject() }
    }

    private func perform<Value>(
        _ operation: S3Operation,
        _ build: (S3Requests) throws(ObjectStorageFailure) -> TransferRequest,
        _ completion: @escaping @Sendable (Result<Value, ObjectStorageFailure>) -> Void,
        read: @escaping @Sendable (S3Answer) -> Result<Value, ObjectStorageFailure>
    ) {
        let request: TransferRequest
        do {
            request = try build(requests)
        } catch {
            return completion(.failure(redaction.redact(error)))
        }
        let redaction = redaction
        run(request) { result in
            completion(read(S3Answer(result, for: operation, redaction: redaction)))
        }
    }
}
