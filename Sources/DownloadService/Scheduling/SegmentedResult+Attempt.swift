import DownloadCore
import Transfer

extension SegmentedResult {
    /// How the attempt over several connections ended, as one transfer's result for its
    /// settlement: complete with the whole file's digests, or the first unfinished range's failure
    /// (and status, and Retry-After), with every range's bytes kept — none after a range that
    /// came back as other bytes than asked for, which the caller starts over from.
    /// - Parameters:
    ///   - bytesAtStart: bytes on disk when this start of the ranges began.
    ///   - firstResponse: what the first connection's response said to name the file by, when the
    ///     ranges followed it in this attempt.
    func attemptResult(of job: Download, bytesAtStart: Int64,
                       firstResponse: (contentDisposition: String?, effectiveURL: String?)?) -> TransferResult {
        let bytes = ranges.reduce(0) { $0 + $1.bytesOnDisk }
        var result = TransferResult(bytesOnDisk: bytes, bytesThisAttempt: max(0, bytes - bytesAtStart),
                                    bytesExpected: job.bytesExpectedFromOrigin, validator: job.validator)
        if isComplete {
            result.httpStatus = 206
            result.sha256 = sha256
            result.extraDigest = extraDigest
            // Named as the first connection's response said, or else (resumed after a restart or
            // a pause) as this start's range responses do.
            let named = firstResponse ?? (contentDisposition, effectiveURL)
            result.contentDisposition = named.contentDisposition
            result.effectiveURL = named.effectiveURL
        } else if let failure {
            result.failure = failure
        } else if let (_, first) = unfinished.min(by: { $0.key < $1.key }) {
            result.failure = first.failure
            result.httpStatus = first.httpStatus
            result.retryAfter = first.retryAfter
            if case .rangeMismatch? = first.failure {
                result.bytesOnDisk = 0
                result.validator = nil
            }
        } else {
            result.failure = .cancelled
        }
        return result
    }
}
