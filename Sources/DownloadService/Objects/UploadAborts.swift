import DownloadCore
import Logging
import Transfer

extension ObjectStorageClient {
    /// Aborts `upload`, a job's multipart upload of an object in `bucket`; for the intent a crash
    /// left without an id (`isBeingCreated`), what it may have left under its key; for the key of
    /// an object put whole, nothing. `then` gets the failure to try again after, or nil once the
    /// storage holds none of it.
    func abort(_ upload: ObjectUpload, in bucket: String, of jobID: String, logger: Logger,
               then: @escaping @Sendable (ObjectStorageFailure?) -> Void) {
        guard !upload.isBeingPut else { return then(nil) }
        let location = ObjectLocation(bucket: bucket, key: upload.key)
        guard !upload.isBeingCreated else { return abortUnrecordedUploads(location, of: jobID, logger: logger, then: then) }
        abortMultipartUpload(location, uploadID: upload.uploadID) { then($0.failureValue) }
    }

    /// Aborts what a crash while the job's multipart upload was created may have left under
    /// `location` (`abortUploadsWithoutParts`). `then` gets the failure to try again after, or nil
    /// once that is done — or cannot be: a storage that refuses to list the bucket's uploads
    /// (credentials without `s3:ListBucketMultipartUploads`, say) leaves such an upload to the
    /// bucket's lifecycle rules.
    func abortUnrecordedUploads(_ location: ObjectLocation, of jobID: String, logger: Logger,
                                then: @escaping @Sendable (ObjectStorageFailure?) -> Void) {
        abortUploadsWithoutParts(location) { swept in
            switch swept {
            case .success(let aborted):
                if aborted > 0 {
                    logger.info("upload left by a crash aborted", metadata: ["download.id": "\(jobID)", "uploads": "\(aborted)"])
                }
                then(nil)
            case .failure(let failure):
                guard case .refused = failure else { return then(failure) }
                logger.warning("cannot look for an upload a crash may have left",
                               metadata: ["download.id": "\(jobID)", "error": "\(failure)"])
                then(nil)
            }
        }
    }
}
