import Dispatch
import DownloadCore

extension ObjectStorageClient {
    /// Completes the upload — or finds that it was: an attempt whose answer to the completion was
    /// lost (a crash, or a database gone, before the answer was stored) leaves the upload gone
    /// (`NoSuchUpload`; with `ifNoneMatch`, possibly 412 for the object it made) and its object at
    /// the key. An object there whose ETag is the one S3 gives these parts is that completion and
    /// counts as this one; anything else is the completion's own failure. No object at the key may
    /// be that completion still at work (a crash came while the storage assembled the object, which
    /// takes seconds for a large one): the key is looked at again after each of `rechecks`.
    public func completeMultipartUploadOnce(_ at: ObjectLocation, uploadID: String, parts: [UploadedPart], ifNoneMatch: Bool,
                                            rechecks: [Duration] = [.seconds(1), .seconds(2), .seconds(4)],
                                            completion: @escaping @Sendable (Result<StoredObject, ObjectStorageFailure>) -> Void) {
        completeMultipartUpload(at, uploadID: uploadID, parts: parts, ifNoneMatch: ifNoneMatch) { completed in
            guard case .failure(let failure) = completed, failure == .noSuchUpload || failure == .exists,
                  let etag = StoredObject.etag(completing: parts)
            else { return completion(completed) }
            self.findCompleted(at, etag: etag, rechecks: rechecks[...]) { found in completion(found.map { .success($0) } ?? completed) }
        }
    }

    /// The object at the key if its ETag is `etag`, looked for again after each of `rechecks` while
    /// there is none; nil otherwise.
    private func findCompleted(_ at: ObjectLocation, etag: String, rechecks: ArraySlice<Duration>,
                               then: @escaping @Sendable (StoredObject?) -> Void) {
        headObject(at) { found in
            switch found {
            case .success(let object?): then(object.etag == etag ? object : nil)
            case .success(nil):
                guard let wait = rechecks.first else { return then(nil) }
                DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(Int(wait.wholeMilliseconds))) {
                    self.findCompleted(at, etag: etag, rechecks: rechecks.dropFirst(), then: then)
                }
            case .failure: then(nil)
            }
        }
    }

    /// Puts the object whole — or finds that it was: under `ifNoneMatch`, an object already at the
    /// key whose ETag is the body's MD5 (S3's ETag of an object put whole) is this body, put by an
    /// attempt whose answer was lost, and counts as put. The body is read again for that only when
    /// an object is there (and only a whole file's body, from its first byte, is recognised).
    public func putObjectOnce(_ at: ObjectLocation, body: TransferRequest.FileRange, sha256: String, ifNoneMatch: Bool,
                              completion: @escaping @Sendable (Result<StoredObject, ObjectStorageFailure>) -> Void) {
        putObject(at, body: body, sha256: sha256, ifNoneMatch: ifNoneMatch) { put in
            guard case .failure(.exists) = put, body.offset == 0 else { return completion(put) }
            self.headObject(at) { found in
                guard case .success(let object?) = found else { return completion(put) }
                DispatchQueue.global(qos: .utility).async {
                    guard case .success(let digests) = FileHash.digests(ofFileAt: body.path, extra: .md5),
                          object.etag == "\"\(digests.extra ?? "")\"" else { return completion(put) }
                    completion(.success(object))
                }
            }
        }
    }
}
