import DownloadCore
import Foundation
import Transfer

/// The requests of tus 1.0 (core, creation, termination) for an upload job: each carries the
/// job's headers, egress policy and limits as any of its requests does, and `Tus-Resumable`.
extension TransferTemplate {
    static let tusVersion = ("Tus-Resumable", "1.0.0")

    /// Creation: a `POST` to the job's URL (the creation endpoint) announcing the source's size,
    /// with its name and type as metadata; the answer's `Location` is the upload resource.
    func tusCreation(for job: Download, plan: UploadPlan, now: Int64) -> TransferRequest {
        var request = tusRequest(for: job, to: job.currentURL, now: now)
        request.method = .post
        request.headers += [("Upload-Length", "\(plan.pin.size)"), ("Upload-Metadata", Self.tusMetadata(plan))]
        return request
    }

    /// How much of the resource the server holds: a `HEAD`, answered with `Upload-Offset`.
    func tusOffset(of resource: String, for job: Download, now: Int64) -> TransferRequest {
        var request = tusRequest(for: job, to: resource, now: now)
        request.method = .head
        return request
    }

    /// One chunk: `length` bytes of the source from `offset`, as a `PATCH` at that offset.
    func tusChunk(to resource: String, for job: Download, plan: UploadPlan, source: SourceFile, offset: Int64, length: Int64,
                  now: Int64) -> TransferRequest {
        var request = tusRequest(for: job, to: resource, now: now)
        request.method = .patch
        request.headers += [("Upload-Offset", "\(offset)"), ("Content-Type", "application/offset+octet-stream")]
        request.bodyFile = TransferRequest.FileRange(path: plan.source.path, offset: offset, length: length, descriptor: source.fd)
        return request
    }

    /// Termination: a `DELETE` of the resource, which frees what the server holds of it.
    func tusTermination(of resource: String, for job: Download) -> TransferRequest {
        var request = tusRequest(for: job, to: resource, now: 0)
        request.method = .delete
        request.totalTimeout = nil
        return request
    }

    private func tusRequest(for job: Download, to url: String, now: Int64) -> TransferRequest {
        var request = request(for: job, sink: .memory(limit: UploadReply.maxBodyBytes + 1), now: now)
        request.url = url
        request.headers.append(Self.tusVersion)
        request.keepsResponseHeaders = true
        // A redirect of a tus request would need the body again at the same offset: an answer.
        request.followRedirects = false
        return request
    }

    /// `Upload-Metadata`: the source's file name and the upload's content type, base64 each (some
    /// servers, aiohttp-tus among them, refuse a creation without a file name).
    static func tusMetadata(_ plan: UploadPlan) -> String {
        "filename \(Data(plan.source.fileName.utf8).base64EncodedString()),filetype \(Data(plan.contentType.utf8).base64EncodedString())"
    }
}

/// What a tus server's answers say.
enum TusAnswer {
    /// The resource a creation made: its `Location`, resolved against the URL asked; nil unless the
    /// answer is a `201` with one.
    static func createdResource(_ result: TransferResult, asked url: String) -> String? {
        guard result.failure == nil, result.httpStatus == 201, let location = result.responseHeader("location"),
              let resolved = URL(string: location, relativeTo: URL(string: result.effectiveURL ?? url))?.absoluteString
        else { return nil }
        return resolved
    }

    /// The offset a `HEAD` or a `PATCH` answered with (a 2xx with `Upload-Offset`).
    static func offset(_ result: TransferResult) -> Int64? {
        guard result.failure == nil, let status = result.httpStatus, (200..<300).contains(status),
              let text = result.responseHeader("upload-offset"), let offset = Int64(text.trimmingCharacters(in: .whitespaces)),
              offset >= 0
        else { return nil }
        return offset
    }

    /// The resource is gone (expired, terminated, never there): a new one must be created.
    static func resourceGone(_ result: TransferResult) -> Bool {
        result.failure == nil && (result.httpStatus == 404 || result.httpStatus == 410)
    }
}
