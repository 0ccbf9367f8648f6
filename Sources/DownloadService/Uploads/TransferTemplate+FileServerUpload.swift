import DownloadCore
import Transfer

extension TransferTemplate {
    /// Whether `url` is a file server's (`ftp://`, `ftps://`, `sftp://`).
    static func isFileServer(_ url: String) -> Bool {
        (try? HTTPURL.parse(url, schemes: HTTPURL.downloadSchemes).get())?.isFileServer == true
    }

    /// One attempt of an upload to a file server: the source, read through the descriptor it was
    /// checked with (its digest is the attempt's, read beside the sending: `UploadAttempts`). A job that sent bytes before (its `bytesReceived`,
    /// what the server held after the last attempt, or the progress saved before a crash) goes on
    /// by appending at the server's size; a first attempt replaces whatever file the server has.
    func fileServerUploadRequest(for job: Download, plan: UploadPlan, source: SourceFile, now: Int64) -> TransferRequest {
        var request = request(for: job, sink: .memory(limit: 0), now: now)
        request.method = .put
        request.bodyFile = TransferRequest.FileRange(path: plan.source.path, offset: 0, length: plan.pin.size, descriptor: source.fd)
        request.appendsAtServerSize = job.bytesReceived > 0
        return request
    }
}
