import Dispatch
import DownloadCore
import Foundation
import Logging
import Transfer

/// Upload jobs' attempts, for the runner that owns it, on its queue: the source opened and held to
/// the pin it was submitted with, then sent as its protocol says — `plain`: whole, and again to
/// where a 307 or 308 points, any other answer ending the attempt; `tus`: a `TusUpload`; to an
/// `s3://` URL: a `BucketUpload`. No
/// mutable state of its own: what an attempt holds is in its `ActiveAttempt`.
struct UploadAttempts: Sendable {
    let sources: UploadSources
    let template: TransferTemplate
    let transfers: any TransferRunning
    /// The runner's queue, where tus uploads run, and its completer, which commits their resources.
    let queue: DispatchQueue
    let completer: Completer
    let tusChunkSize: Int64
    /// Where an upload-reply's body is written until it is placed at its `replyDestination`, and
    /// a tus upload's `TusWitness`.
    let partials: PartialFiles
    /// Where `s3://` URLs go; nil when no object storage is configured.
    let storage: ObjectStorage?
    let clock: Clock
    let logger: Logger

    /// The most 307s and 308s one attempt follows (curl's own limit for downloads).
    static let maxRedirects = 10

    /// Why an upload cannot be sent now, before a byte goes.
    enum Refusal: Error, Equatable {
        case sourceChanged(String)
        case sourceUnreadable(String)
        case checksumMismatch(String)
    }

    /// Checks the source against the job's `checksum` before anything is sent: `then` gets the
    /// source's SHA-256 when it matches, or why it does not, on any thread. The source stays open
    /// in the attempt.
    func verify(_ attempt: inout ActiveAttempt, plan: UploadPlan, checksum: Checksum,
                then: @escaping @Sendable (Result<String, Refusal>) -> Void) -> Refusal? {
        let source: SourceFile
        switch open(&attempt, plan: plan) {
        case .success(let file): source = file
        case .failure(let refusal): return refusal
        }
        let extra = checksum.algorithm == .sha256 ? nil : checksum.algorithm
        SourceHasher(source: source, extra: extra).digests(at: plan.pin.size) { digests in
            guard let digests else { return then(.failure(.sourceUnreadable("the source could not be read to check its checksum"))) }
            let actual = extra == nil ? digests.sha256 : digests.extra
            guard actual == checksum.hex else {
                return then(.failure(.checksumMismatch("the source's \(checksum.algorithm.rawValue) is \(actual ?? "unknown"), not \(checksum.hex)")))
            }
            then(.success(digests.sha256))
        }
        return nil
    }

    /// The attempt's source, opened and checked against its pin once per attempt.
    private func open(_ attempt: inout ActiveAttempt, plan: UploadPlan) -> Result<SourceFile, Refusal> {
        if let open = attempt.source { return .success(open) }
        switch sources.open(plan.source, pinned: plan.pin) {
        case .success(let file):
            attempt.source = file
            return .success(file)
        case .failure(let problem):
            return .failure(Self.refusal(problem))
        }
    }

    /// Sends the attempt's source to `url` (the job's current URL, or where a redirect pointed);
    /// the source stays open in the attempt until it settles. `resourceChanged` gets a tus
    /// upload's resource as it is handed to the store (the job's settlement must write the same).
    func start(_ attempt: inout ActiveAttempt, plan: UploadPlan, url: String, now: Int64,
               resourceChanged: @escaping (ObjectUpload) -> Void,
               onProgress: @escaping @Sendable (TransferProgress) -> Void,
               onComplete: @escaping @Sendable (TransferResult) -> Void) -> Refusal? {
        let source: SourceFile
        switch open(&attempt, plan: plan) {
        case .success(let file): source = file
        case .failure(let refusal): return refusal
        }
        if let bucket = attempt.download.destination.bucket {
            guard let storage else { return .sourceUnreadable("no object storage is configured (FETCHD_S3_ENDPOINT)") }
            let location = ObjectLocation(bucket: bucket, key: attempt.download.destination.relativePath)
            return run(&attempt, BucketUpload(
                job: attempt.download, plan: plan, location: location, source: source, client: storage.client, partSize: storage.partSize,
                queue: queue, commit: committing(attempt.download.id, resourceChanged), logger: logger,
                onProgress: onProgress, onComplete: onComplete))
        }
        if plan.uploadProtocol == .tus {
            logger.info("upload started", metadata: ["download.id": "\(attempt.download.id)", "attempt": "\(attempt.download.attempts)",
                                                     "protocol": "tus"])
            return run(&attempt, TusUpload(
                job: attempt.download, plan: plan, source: source, chunkSize: tusChunkSize, queue: queue, template: template,
                transfers: transfers, commit: committing(attempt.download.id, resourceChanged),
                witness: TusWitness(path: partials.path(attempt.download.id)), clock: clock, logger: logger,
                onProgress: onProgress, onComplete: onComplete))
        }
        var job = attempt.download
        job.url = url
        job.mirrorIndex = 0
        let replyPath = plan.replyDestination.map { _ in partials.path(job.id) }
        let fileServer = TransferTemplate.isFileServer(url)
        var request = fileServer
            ? template.fileServerUploadRequest(for: job, plan: plan, source: source, now: now)
            : template.uploadRequest(for: job, plan: plan, source: source, replyPath: replyPath, now: now)
        logger.info("upload started", metadata: ["download.id": "\(job.id)", "attempt": "\(job.attempts)", "bytes": "\(plan.pin.size)"])
        // The digest is known from the checksum's check; or the engine hashes the body as curl
        // reads it; or, for a file server, which may be sent only what it lacked, the whole source
        // is read beside the sending on a queue of its own. It counts once the whole source went.
        let size = plan.pin.size
        let known = attempt.sourceSHA256
        let hasher = known == nil && fileServer ? SourceHasher(source: source) : nil
        hasher?.hash(upTo: size)
        request.bodyFile?.hashed = known == nil && !fileServer
        attempt.transferID = transfers.start(request, onProgress: onProgress, onComplete: { result in
            // A file server's attempt may send only what the server lacked: what it holds counts.
            guard (fileServer ? result.bytesOnDisk : result.bytesSent) == size else { return onComplete(result) }
            let completeWith: @Sendable (String?) -> Void = { sha256 in
                var hashed = result
                hashed.bodySHA256 = sha256
                onComplete(hashed)
            }
            if let hasher { hasher.finish(at: size, completeWith) } else { completeWith(known ?? result.bodySHA256) }
        })
        return nil
    }

    private func run(_ attempt: inout ActiveAttempt, _ sending: any UploadSending) -> Refusal? {
        attempt.sending = sending
        sending.start()
        return nil
    }

    /// Hands the job's upload (a multipart upload, its intent, a tus resource) to the store; the
    /// answer says whether the job was still this node's to write.
    private func committing(_ id: String, _ changed: @escaping (ObjectUpload) -> Void) -> TusUpload.Commit {
        let completer = completer
        return { upload, then in
            changed(upload)
            completer.add(JobWrite(changes: [.objectUpload(id: id, upload: upload, expecting: [.running])]) { then($0[0]) })
        }
    }

    /// Where the attempt goes next after `result`: the URL a 307 or 308 points to (resolved against
    /// the URL it answered), while the attempt has redirects left; nil when `result` is the answer.
    func redirect(after result: TransferResult, from url: String, followed: Int) -> String? {
        guard let status = result.httpStatus, status == 307 || status == 308, followed < Self.maxRedirects,
              let location = result.responseHeader("location"),
              let target = URL(string: location, relativeTo: URL(string: result.effectiveURL ?? url))?.absoluteString
        else { return nil }
        return target
    }

    /// Whether the source is still the file pinned, now that its bytes were sent: one that changed
    /// while it was read may have sent a mix of both.
    func sourceIsUnchanged(_ attempt: ActiveAttempt, plan: UploadPlan) -> Bool {
        attempt.source?.pin == plan.pin
    }

    private static func refusal(_ problem: UploadSources.Problem) -> Refusal {
        switch problem {
        case .changed: .sourceChanged("the source is not the file submitted (its size or modification time changed)")
        case .missing: .sourceChanged("the source is gone")
        case .invalid(let message): .sourceChanged("the source \(message)")
        case .io(let message): .sourceUnreadable(message)
        }
    }
}
