import DownloadCore
import Transfer

/// Settling an upload to a file server: no HTTP answer comes, so the attempt completes when
/// curl reports success and the server holds the whole source (its digest then comes with the
/// result: `UploadAttempts`). What the server holds (`TransferResult.bytesOnDisk`) is kept as the
/// job's `bytesReceived`, where the next attempt appends.
extension Settlement {
    func settleFileServerUpload(plan: UploadPlan, sourceUnchanged: Bool) -> JobWrite {
        guard sourceUnchanged else {
            return failing(DownloadError(code: ErrorCode.sourceChanged, message: "the source changed while it was sent"))
        }
        guard result.failure == nil else { return settle() }
        guard let digest = result.bodySHA256 else {
            let cause = DownloadError(code: ErrorCode.network, message: "the server took the upload before the whole source was sent")
            return retry(after: context.retryPolicy.delay(afterAttempt: job.attemptsInBudget, retryAfter: nil, jitter: jitter), cause: cause)
        }
        return uploadCompleted(digest: digest, plan: plan)
    }
}
