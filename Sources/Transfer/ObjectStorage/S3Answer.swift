/// One S3 answer read for the operation that asked for it: the failure it means, else the value
/// it carries. Failures' messages are redacted.
struct S3Answer {
    let result: TransferResult
    let document: S3XMLDocument?
    let operation: S3Operation
    let redaction: S3MessageRedaction

    init(_ result: TransferResult, for operation: S3Operation, redaction: S3MessageRedaction) {
        self.result = result
        self.document = S3XMLDocument.parse(result.responseBody)
        self.operation = operation
        self.redaction = redaction
    }

    var failure: ObjectStorageFailure? {
        ObjectStorageFailure.classify(result, document: document, operation: operation).map(redaction.redact)
    }

    /// CreateMultipartUpload: `InitiateMultipartUploadResult/UploadId`.
    func uploadID() -> Result<String, ObjectStorageFailure> {
        if let failure { return .failure(failure) }
        guard let document, document.root == "InitiateMultipartUploadResult",
              let id = document.fields["UploadId"], !id.isEmpty
        else { return .failure(notUnderstood("no UploadId")) }
        return .success(id)
    }

    /// UploadPart: the `ETag` header, as sent.
    func uploadedPart(number: Int, size: Int64) -> Result<UploadedPart, ObjectStorageFailure> {
        if let failure { return .failure(failure) }
        guard let etag = nonEmptyHeader("etag") else { return .failure(notUnderstood("no ETag")) }
        return .success(UploadedPart(number: number, size: size, etag: etag))
    }

    /// CompleteMultipartUpload: the result document's `ETag` (S3 names the root
    /// `CompleteMultipartUploadResult`, some servers `…Response`); PutObject: the `ETag` header.
    /// The version id is the `x-amz-version-id` header.
    func storedObject() -> Result<StoredObject, ObjectStorageFailure> {
        if let failure { return .failure(failure) }
        let etag: String?
        if operation == .completeMultipartUpload {
            etag = document?.fields["ETag"].flatMap { $0.isEmpty ? nil : $0 } ?? nonEmptyHeader("etag")
        } else {
            etag = nonEmptyHeader("etag")
        }
        guard let etag else { return .failure(notUnderstood("no ETag")) }
        return .success(StoredObject(etag: etag, versionID: nonEmptyHeader("x-amz-version-id")))
    }

    /// ListParts: each `Part`'s number, size and ETag, in order of their numbers (S3 names the
    /// root `ListPartsResult`, moto `ListPartsResponse`).
    func listedParts() -> Result<[UploadedPart], ObjectStorageFailure> {
        if let failure { return .failure(failure) }
        guard let document, document.root == "ListPartsResult" || document.root == "ListPartsResponse" else { return .failure(notUnderstood("no ListPartsResult")) }
        var parts: [UploadedPart] = []
        for record in document.records["Part", default: []] {
            guard let number = record["PartNumber"].flatMap({ Int($0) }), let size = record["Size"].flatMap({ Int64($0) }),
                  let etag = record["ETag"], !etag.isEmpty
            else { return .failure(notUnderstood("a part without its number, size or ETag")) }
            parts.append(UploadedPart(number: number, size: size, etag: etag))
        }
        return .success(parts.sorted { $0.number < $1.number })
    }

    /// ListMultipartUploads: the upload ids of each `Upload` whose key is `key` exactly (the
    /// listing is by prefix).
    func listedUploads(of key: String) -> Result<[String], ObjectStorageFailure> {
        if let failure { return .failure(failure) }
        guard let document, document.root == "ListMultipartUploadsResult" else {
            return .failure(notUnderstood("no ListMultipartUploadsResult"))
        }
        var ids: [String] = []
        for record in document.records["Upload", default: []] where record["Key"] == key {
            guard let id = record["UploadId"], !id.isEmpty else { return .failure(notUnderstood("an upload without its id")) }
            ids.append(id)
        }
        return .success(ids)
    }

    /// AbortMultipartUpload: an upload already gone is as good as aborted.
    func aborted() -> Result<Void, ObjectStorageFailure> {
        switch failure {
        case nil, .noSuchUpload?: return .success(())
        case let failure?: return .failure(failure)
        }
    }

    /// HeadObject: the object's ETag and version id, nil when there is none (404).
    func headObject() -> Result<StoredObject?, ObjectStorageFailure> {
        exists().flatMap { $0 ? storedObject().map { $0 } : .success(nil) }
    }

    /// HeadObject: 200 there, 404 not (a HEAD answer has no body to tell a missing object from a
    /// missing bucket).
    func exists() -> Result<Bool, ObjectStorageFailure> {
        if result.failure == nil && result.httpStatus == 404 { return .success(false) }
        if let failure { return .failure(failure) }
        return .success(true)
    }

    private func nonEmptyHeader(_ name: String) -> String? {
        result.responseHeader(name).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A 2xx without what it should carry: a broken server or proxy, perhaps not for long.
    private func notUnderstood(_ what: String) -> ObjectStorageFailure {
        .unavailable("\(what) in the answer (HTTP \(result.httpStatus.map(String.init) ?? "none"))")
    }
}
