import DownloadCore
import HTTPServer

/// The Upload resource's endpoints: an upload is a job like a download, stored, scheduled and
/// changed by the same code; these take its own body and show it as itself.
extension DownloadsAPI {
    /// `POST /uploads`: the source must be a regular file under the upload root now; it is pinned
    /// as it is, and an upload whose source changes later fails with `source_changed`.
    func createUpload(_ request: HTTPRequest, principal: String) async throws -> HTTPResponse {
        let submission: NewUpload
        switch UploadValidator.validate(try Self.jsonBody(request, what: "the upload")) {
        case .success(let value): submission = value
        case .failure(let failure): throw APIProblem.invalid(failure.errors)
        }
        if submission.object != nil, configuration.objectStorage == nil {
            throw APIProblem.invalid("url", "names a bucket, but no object storage is configured (FETCHD_S3_ENDPOINT)")
        }
        try checkWebhookAddress(submission.webhookURL)
        if let reply = submission.replyDestination { try checkReplyDestination(reply) }
        try checkHostKeyTrust(submission.url, field: "url")
        return try await insertNew(request, principal: principal) { id, now in
            switch sources.pin(submission.source) {
            case .success(let pin): return submission.makeDownload(id: id, now: now, pin: pin)
            case .failure(.missing): throw APIProblem.invalid("source", "does not exist under the upload root")
            case .failure(.invalid(let message)): throw APIProblem.invalid("source", message)
            case .failure(.changed), .failure(.io): throw APIProblem.invalid("source", "cannot be read")
            }
        }
    }

    /// An upload-reply's destination follows a download's with `onConflict: fail`.
    private func checkReplyDestination(_ destination: Destination) throws {
        switch files.check(destination) {
        case .failure(.invalid(let message)): throw APIProblem.invalid("replyDestination", message)
        case .failure(let problem):
            throw APIProblem(status: 400, title: "Bad Request", detail: "the reply destination cannot be used: \(problem)",
                             errors: [FieldError(field: "replyDestination", message: "cannot be used")])
        case .success(true): throw APIProblem.conflict("a file already exists at the reply destination")
        case .success(false): break
        }
    }
}
