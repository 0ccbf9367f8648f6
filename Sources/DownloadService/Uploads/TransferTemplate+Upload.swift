import DownloadCore
import Transfer

extension TransferTemplate {
    /// One attempt of a plain upload: the whole source — read through the descriptor it was opened
    /// and checked with — as the body of a PUT or POST to the job's URL (its digest is the
    /// attempt's to compute, apart from the sending: `UploadAttempts`). The
    /// reply's body is kept in memory (a little more than the Upload shows, to tell a longer one)
    /// or, for a `replyDestination`, written to `replyPath`. curl follows no redirect: the attempt
    /// sends the body again after a 307 or 308 itself, and takes any other as the answer.
    func uploadRequest(for job: Download, plan: UploadPlan, source: SourceFile, replyPath: String?, now: Int64) -> TransferRequest {
        let sink: TransferRequest.Sink = replyPath.map { .file(path: $0, resumeValidator: nil) } ?? .memory(limit: UploadReply.maxBodyBytes + 1)
        var request = request(for: job, sink: sink, now: now)
        request.method = plan.method == .post ? .post : .put
        request.headers.append(("Content-Type", plan.contentType))
        request.bodyFile = TransferRequest.FileRange(path: plan.source.path, offset: 0, length: plan.pin.size, descriptor: source.fd)
        request.keepsResponseHeaders = true
        request.followRedirects = false
        return request
    }
}
