import DownloadCore
import Persistence
import Transfer

/// Settling an upload's attempt: completed on a 2xx once the whole source went and is still the
/// file pinned at submit; any other answer weighed by the retry policy as a download's is. The
/// server's answer is kept as the job's reply either way.
extension Settlement {
    func settleUpload(sourceUnchanged: Bool) -> JobWrite {
        guard let plan = job.upload else { return settle() }
        if TransferTemplate.isFileServer(job.currentURL) { return settleFileServerUpload(plan: plan, sourceUnchanged: sourceUnchanged) }
        let replied = with { job, _ in
            if let reply = UploadReply(result, bodyInMemory: plan.replyDestination == nil) { job.upload?.reply = reply }
        }
        guard sourceUnchanged else {
            return replied.failing(DownloadError(code: ErrorCode.sourceChanged, message: "the source changed while it was sent"))
        }
        guard result.failure == nil, let status = result.httpStatus, (200..<300).contains(status) else { return replied.settle() }
        guard let digest = result.bodySHA256 else {
            let cause = DownloadError(code: ErrorCode.httpStatus, message: "the server answered \(status) before the whole source was sent")
            return replied.retry(after: context.retryPolicy.delay(afterAttempt: job.attemptsInBudget, retryAfter: nil, jitter: jitter),
                                 cause: cause)
        }
        return replied.uploadCompleted(digest: digest, plan: plan)
    }

    /// The source could not be sent at all: not the file pinned (or gone), or unreadable.
    func uploadRefused(_ refusal: UploadAttempts.Refusal) -> JobWrite {
        switch refusal {
        case .sourceChanged(let message): failing(DownloadError(code: ErrorCode.sourceChanged, message: message))
        case .sourceUnreadable(let message): failing(DownloadError(code: ErrorCode.fileError, message: message))
        case .checksumMismatch(let message): failing(DownloadError(code: ErrorCode.checksumMismatch, message: message))
        }
    }

    func uploadCompleted(digest: String, plan: UploadPlan) -> JobWrite {
        let size = plan.pin.size
        var done = attemptRecorded()
        done.state = .completed
        done.sha256 = digest
        done.bytesReceived = size
        done.bytesExpectedFromOrigin = size
        done.error = nil
        done.finishedAt = now
        // The multipart upload or tus resource is the server's object or file now: nothing is left
        // to resume, abort or terminate (its column is cleared by a change of its own, below).
        done.objectUpload = nil
        // An upload-reply: the server's answer goes to its destination as a download's file does.
        var placed: (directory: PlacedDirectory, destination: Destination)?
        if let replyDestination = plan.replyDestination {
            switch place(replyDestination, overwrite: false) {
            case .failed(let error): return fail(error)
            case .placed(let directory, let name): placed = (directory, Destination(stored: replyDestination.pathInDirectory(named: name)))
            }
            done.path = placed?.destination.path
        }
        // The source goes once the completion is committed. Until it is gone the job keeps a
        // partial file (its reply's, its tus witness, or an empty mark): a start after a kill in
        // between finds it beside a completed upload and removes the source then (Recovery).
        let marked = plan.deleteSource && placed == nil && context.partials.mark(job.id)
        let witnessed = plan.uploadProtocol == .tus
        let (job, logger, context, partialPath) = (job, context.logger, context, context.partials.path(job.id))
        var write = terminal(done, attempt: attempt("completed")) { committed in
            if committed {
                logger.info("upload completed", metadata: ["download.id": "\(job.id)", "bytes": "\(size)"])
                context.sources?.removeSent(by: job, logger: logger)
            } else if let placed {
                context.files.unplace(partial: partialPath, destination: placed.destination)
            }
            // A refused commit takes only an empty mark away: a tus witness is what the next
            // attempt completes by, should the server have removed the finished resource.
            if committed ? placed != nil || marked || witnessed : marked && !witnessed { context.partials.remove(job.id) }
        }
        write.placedIn = placed?.directory
        if job.objectUpload != nil { write.changes.append(.objectUpload(id: job.id, upload: nil, expecting: [.completed])) }
        return write
    }
}
