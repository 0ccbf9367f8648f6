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

    /// What the server takes: an `OPTIONS` of the creation endpoint, answered with `Tus-Extension`
    /// (and `Tus-Checksum-Algorithm` when it checks chunks).
    func tusOptions(for job: Download, now: Int64) -> TransferRequest {
        var request = tusRequest(for: job, to: job.currentURL, now: now)
        request.method = .options
        return request
    }

    /// How much of the resource the server holds: a `HEAD`, answered with `Upload-Offset`.
    func tusOffset(of resource: String, for job: Download, now: Int64) -> TransferRequest {
        var request = tusRequest(for: job, to: resource, now: now)
        request.method = .head
        return request
    }

    /// One chunk: `length` bytes of the source from `offset`, as a `PATCH` at that offset, with the
    /// chunk's `Upload-Checksum` (`<algorithm> <base64 digest>`) when the server checks them.
    func tusChunk(to resource: String, for job: Download, plan: UploadPlan, source: SourceFile, offset: Int64, length: Int64,
                  checksum: String? = nil, now: Int64) -> TransferRequest {
        var request = tusRequest(for: job, to: resource, now: now)
        request.method = .patch
        request.headers += [("Upload-Offset", "\(offset)"), ("Content-Type", "application/offset+octet-stream")]
        if let checksum { request.headers.append(("Upload-Checksum", checksum)) }
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

    /// The algorithm chunks are checked with: the first of fetchd's preferences the server lists in
    /// `Tus-Checksum-Algorithm`, when `Tus-Extension` names `checksum`; nil for none.
    static func checksumAlgorithm(_ result: TransferResult) -> DigestAlgorithm? {
        guard result.failure == nil, let status = result.httpStatus, (200..<300).contains(status),
              let extensions = result.responseHeader("tus-extension"), names(extensions).contains("checksum"),
              let offered = result.responseHeader("tus-checksum-algorithm")
        else { return nil }
        let algorithms = names(offered)
        return [DigestAlgorithm.sha256, .sha1, .md5].first { algorithms.contains($0.rawValue) }
    }

    /// The `Upload-Checksum` of a chunk whose digest is `hex`.
    static func checksumHeader(_ algorithm: DigestAlgorithm, hex: String) -> String? {
        [UInt8](hex: hex).map { "\(algorithm.rawValue) \(Data($0).base64EncodedString())" }
    }

    /// The server refused a chunk whose checksum did not match what it received (460).
    static func checksumRefused(_ result: TransferResult) -> Bool {
        result.failure == nil && result.httpStatus == 460
    }

    private static func names(_ list: String) -> Set<String> {
        Set(list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
    }

    /// The resource is gone (expired, terminated, never there): a new one must be created.
    static func resourceGone(_ result: TransferResult) -> Bool {
        result.failure == nil && (result.httpStatus == 404 || result.httpStatus == 410)
    }
}
