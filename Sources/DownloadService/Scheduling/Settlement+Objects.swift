import DownloadCore
import Persistence
import Transfer

/// Settling an attempt whose destination is an object: its bytes are all in and hashed, and the
/// object is completed (or put) in the bucket only after these checks pass.
extension Settlement {
    /// Why the object must not be completed: a digest that does not match; nil when all do.
    func objectProblem(key: String) -> DownloadError? {
        guard let sha256 = result.sha256 else {
            return DownloadError(code: ErrorCode.fileError, message: "the object's digest was not computed")
        }
        return verify(sha256, fileName: String(key.split(separator: "/").last ?? ""))
    }

    /// The object is in the bucket under `key`: the job is completed, its upload done with.
    func objectCompleted(key: String, stored: StoredObject) -> JobWrite {
        var done = attemptRecorded()
        done.state = .completed
        done.sha256 = result.sha256
        done.bytesExpectedFromOrigin = done.bytesExpectedFromOrigin ?? result.bytesOnDisk
        done.error = nil
        done.finishedAt = now
        done.path = key
        done.objectUpload = nil
        done.objectETag = stored.etag
        done.objectVersionID = stored.versionID
        let (id, context, bytes) = (job.id, context, result.bytesOnDisk)
        var write = terminal(done, attempt: attempt("completed")) { committed in
            guard committed else { return }
            context.partials.remove(id)
            context.logger.info("download completed into object storage", metadata: ["download.id": "\(id)", "bytes": "\(bytes)"])
        }
        // The upload is done with (completed, nothing to abort); its column is the attempt's own.
        write.changes.append(.objectUpload(id: id, upload: nil, expecting: [.completed]))
        return write
    }

    /// Storage failures with a meaning of their own; nil for those the retry policy weighs.
    func settleObject(_ failure: ObjectStorageFailure) -> JobWrite? {
        switch failure {
        case .exists:
            return fail(DownloadError(code: ErrorCode.destinationExists, message: "an object already exists at the destination"))
        case .noSuchUpload:
            // The upload is gone, its parts with it: the object starts over from its first byte.
            context.partials.remove(job.id)
            var write = with { fresh, result in
                fresh.bytesReceived = 0
                fresh.validator = nil
                fresh.objectUpload = nil
                result = TransferResult(failure: .storage(.unavailable("the multipart upload is gone; the object starts over")))
            }.settle()
            write.changes.append(.objectUpload(id: job.id, upload: nil, expecting: [.queued, .failed]))
            return write
        case .refused, .unavailable, .unreachable:
            return nil
        }
    }
}

extension AttemptOutcome {
    /// How a storage failure weighs for the retry policy.
    init(storage failure: ObjectStorageFailure) {
        switch failure {
        case .refused(let status, let code, let message):
            self = .storageRefused("the object storage refused the request (\(status) \(code)): \(message)")
        case .unavailable(let message):
            self = .storageUnavailable("the object storage failed: \(message)")
        case .unreachable(let message):
            self = .storageUnreachable("the object storage cannot be reached: \(message)")
        case .exists:
            self = .storageRefused("an object already exists at the destination")
        case .noSuchUpload:
            self = .storageUnavailable("the multipart upload is gone")
        }
    }
}

extension Settlement {
    /// Fails the job with `error` (a digest that does not match).
    func failing(_ error: DownloadError) -> JobWrite { fail(error) }

    /// The same settlement of another job or result.
    func with(_ change: (inout Download, inout TransferResult) -> Void) -> Settlement {
        var (changedJob, changedResult) = (job, result)
        change(&changedJob, &changedResult)
        return Settlement(context: context, job: changedJob, result: changedResult, startedAt: startedAt, now: now, jitter: jitter,
                          digestFile: digestFile, reachedURL: reachedURL)
    }
}
