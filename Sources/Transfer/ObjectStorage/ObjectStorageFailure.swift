/// Why an object-storage operation failed, by what the caller should do about it. No message
/// carries the secret key or a request signature.
public enum ObjectStorageFailure: Error, Sendable, Equatable {
    /// No retry fixes it: AccessDenied, SignatureDoesNotMatch, NoSuchBucket, InvalidAccessKeyId,
    /// EntityTooSmall, InvalidPart, any other 4xx, a redirect (wrong region or endpoint). Status 0:
    /// refused here, nothing was sent (bad settings, an invalid bucket, key or argument).
    case refused(status: Int, code: String, message: String)
    /// A conditional write (`If-None-Match: *`) found an object already there (412 PreconditionFailed).
    case exists
    /// The multipart upload is gone (NoSuchUpload), or S3 asks for it to be started over: a
    /// CompleteMultipartUpload answered 409 ConditionalRequestConflict (a concurrent write to the
    /// key) cannot be retried, only a new upload can. Aborting the old one is harmless either way.
    case noSuchUpload
    /// Retry later: 5xx, 429, SlowDown, RequestTimeout, InternalError, a conditional PutObject's
    /// 409 ConditionalRequestConflict, a timeout or a connection lost mid-request, an answer not
    /// understood.
    case unavailable(String)
    /// The endpoint (or the proxy to it) could not be reached at all: an outage, no request was sent.
    case unreachable(String)
}
