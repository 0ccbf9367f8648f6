extension ObjectStorageClient {
    /// Completes the upload — or finds that it was: an attempt whose answer to the completion was
    /// lost (a crash, or a database gone, before the answer was stored) leaves the upload gone
    /// (`NoSuchUpload`; with `ifNoneMatch`, possibly 412 for the object it made) and its object at
    /// the key. An object there whose ETag is the one S3 gives these parts is that completion and
    /// counts as this one; anything else is the completion's own failure.
    public func completeMultipartUploadOnce(_ at: ObjectLocation, uploadID: String, parts: [UploadedPart], ifNoneMatch: Bool,
                                            completion: @escaping @Sendable (Result<StoredObject, ObjectStorageFailure>) -> Void) {
        completeMultipartUpload(at, uploadID: uploadID, parts: parts, ifNoneMatch: ifNoneMatch) { completed in
            guard case .failure(let failure) = completed, failure == .noSuchUpload || failure == .exists,
                  let etag = StoredObject.etag(completing: parts)
            else { return completion(completed) }
            self.headObject(at) { found in
                guard case .success(let object?) = found, object.etag == etag else { return completion(completed) }
                completion(.success(object))
            }
        }
    }
}
