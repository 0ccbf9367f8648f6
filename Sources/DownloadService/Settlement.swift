import DownloadCore
import Logging
import Store
import Transfer

/// Settles one finished transfer attempt: completes, retries or fails the job, each as one
/// compare-and-set transaction on `running` that also records the job's webhook event.
struct Settlement {
    let scheduler: Scheduler
    let job: Download
    let result: TransferResult
    let startedAt: Int64
    let now: Int64

    private var store: Store { scheduler.store }
    private var logger: Logger { scheduler.logger }
    private var partialPath: String { scheduler.partials.path(job.id) }

    func settle() {
        if result.failure == nil, let digest = result.sha256 {
            return complete(digest: digest)
        }
        guard let outcome = AttemptOutcome(result) else { return stopped(.shutdown) }
        switch scheduler.retryPolicy.decide(outcome, attempts: job.attempts, retryAfter: result.retryAfter, jitter: Double.random(in: 0..<1)) {
        case .finish:
            // A 2xx without a digest means the body never reached the file; try again.
            retry(after: scheduler.retryPolicy.delay(afterAttempt: job.attempts, retryAfter: nil, jitter: 0.5),
                  cause: DownloadError(code: ErrorCode.fileError, message: "the response body was not stored"))
        case .retry(let after, let cause):
            retry(after: after, cause: cause)
        case .fail(let error):
            fail(error)
        }
    }

    /// The transfer was stopped on purpose: by a cancel, a pause, or fetchd shutting down.
    func stopped(_ reason: Scheduler.StopReason) {
        switch reason {
        case .cancel:
            scheduler.partials.remove(job.id)
            save { try store.record(attempt("cancelled"), of: job.id) }
        case .pause:
            save {
                try store.updateProgress(id: job.id, bytesReceived: result.bytesOnDisk, bytesExpected: result.bytesExpected, validator: result.validator)
                try store.record(attempt("paused"), of: job.id)
            }
        case .shutdown:
            var queued = attemptRecorded()
            queued.state = .queued
            queued.runAt = now
            queued.error = job.error
            saveTransition(queued, attempt: attempt("interrupted"))
        }
    }

    private func complete(digest: String) {
        if let expected = job.expectedSHA256, expected != digest {
            return fail(DownloadError(code: ErrorCode.checksumMismatch, message: "the file's SHA-256 is \(digest), expected \(expected)"))
        }
        switch scheduler.files.place(partial: partialPath, destination: job.destination, jobID: job.id, overwrite: job.overwrite) {
        case .failure(.exists):
            return fail(DownloadError(code: ErrorCode.destinationExists, message: "a file appeared at the destination before completion"))
        case .failure(.invalid(let message)):
            return fail(DownloadError(code: ErrorCode.invalidDestination, message: "the destination \(message)"))
        case .failure(.diskFull):
            return fail(DownloadError(code: ErrorCode.diskFull, message: "no space left to place the file"))
        case .failure(.io(let message)):
            return fail(DownloadError(code: ErrorCode.fileError, message: message))
        case .success:
            break
        }
        var done = attemptRecorded()
        done.state = .completed
        done.sha256 = digest
        done.bytesExpectedFromOrigin = done.bytesExpectedFromOrigin ?? result.bytesOnDisk
        done.error = nil
        done.finishedAt = now
        if commit(done, attempt: attempt("completed")) {
            scheduler.partials.remove(job.id)
            logger.info("download completed", metadata: ["download.id": "\(job.id)", "bytes": "\(result.bytesOnDisk)"])
        } else {
            // Cancelled or paused while finishing: take the file back out; a paused job keeps its data.
            scheduler.files.unplace(partial: partialPath, destination: job.destination)
            if (try? store.download(id: job.id))??.state != .paused { scheduler.partials.remove(job.id) }
        }
    }

    private func retry(after seconds: Double, cause: DownloadError) {
        var queued = attemptRecorded()
        queued.state = .queued
        queued.error = cause
        queued.nextAttemptAt = now + Int64(seconds * 1000)
        queued.runAt = max(queued.nextAttemptAt ?? now, job.earliestBeginDate ?? now)
        logger.info("download will retry", metadata: [
            "download.id": "\(job.id)", "error.code": "\(cause.code)", "retry.in": "\(seconds)s", "http.status": "\(result.httpStatus ?? 0)",
        ])
        saveTransition(queued, attempt: attempt("retry", error: cause))
    }

    private func fail(_ error: DownloadError) {
        var failed = attemptRecorded()
        failed.state = .failed
        failed.error = error
        failed.finishedAt = now
        logger.info("download failed", metadata: ["download.id": "\(job.id)", "error.code": "\(error.code)", "http.status": "\(result.httpStatus ?? 0)"])
        // The data is of no use now; removing it first frees the space a full disk needs for the commit.
        scheduler.partials.remove(job.id)
        failed.bytesReceived = 0
        _ = commit(failed, attempt: attempt("failed", error: error))
    }

    /// The attempt's record, counted in the metrics as it is made.
    private func attempt(_ outcome: String, error: DownloadError? = nil) -> AttemptRecord {
        let metrics = scheduler.metrics
        metrics.increment("fetchd_attempts_total", labels: Metrics.labels(["outcome": outcome]))
        metrics.increment("fetchd_downloaded_bytes_total", by: Double(result.bytesThisAttempt))
        metrics.observe("fetchd_transfer_duration_seconds", seconds: Double(now - startedAt) / 1000, bounds: Metrics.transferBuckets)
        return AttemptRecord(number: job.attempts, startedAt: startedAt, endedAt: now, outcome: outcome, error: error,
                      httpStatus: result.httpStatus, bytesTransferred: result.bytesThisAttempt, bytesOnDisk: result.bytesOnDisk)
    }

    /// The job with what this attempt learned: status, sizes and the validator of the partial data.
    private func attemptRecorded() -> Download {
        var updated = job
        updated.httpStatus = result.httpStatus ?? job.httpStatus
        updated.bytesReceived = result.bytesOnDisk
        updated.bytesExpectedFromOrigin = result.bytesExpected ?? job.bytesExpectedFromOrigin
        updated.validator = result.validator ?? (result.bytesOnDisk > 0 ? job.validator : nil)
        return updated
    }

    /// A terminal transition with its webhook event (and `session.finished` if it was the session's last live job).
    private func commit(_ terminal: Download, attempt: AttemptRecord) -> Bool {
        let events = scheduler.events
        let now = self.now
        var committed = false
        save {
            committed = try store.update(terminal, expecting: [.running], events: [events.terminal(terminal, now: now)],
                                         attempt: attempt) { snapshot in
                [events.sessionFinished(snapshot, now: now)]
            }
        }
        if committed {
            scheduler.onEventsRecorded()
            scheduler.hub.publish(terminal.id, .state(terminal))
        }
        return committed
    }

    /// A non-terminal transition from `running` (back to the queue).
    private func saveTransition(_ download: Download, attempt: AttemptRecord) {
        save {
            if try store.update(download, expecting: [.running], attempt: attempt) { scheduler.hub.publish(download.id, .state(download)) }
        }
    }

    /// A failed write leaves the job `running`; the next start puts it back in the queue.
    private func save(_ body: () throws -> Void) {
        do {
            try body()
        } catch {
            logger.error("job state not saved", metadata: ["download.id": "\(job.id)", "error": "\(error)"])
        }
    }
}
