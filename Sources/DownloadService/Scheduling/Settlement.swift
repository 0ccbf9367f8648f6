import DownloadCore
import Logging
import Persistence
import Transfer

/// What settling one attempt writes, and what follows once that is committed. The scheduler
/// commits the writes of every attempt that ended since its last turn in one transaction.
struct JobWrite {
    var changes: [StoreChange] = []
    /// Where a finished file was linked in: synced before the changes are committed.
    var placedIn: PlacedDirectory?
    /// Runs after the commit with one result per change, once the commit succeeded (the scheduler
    /// commits a failed write again until it does).
    var committed: ([Bool]) -> Void = { _ in }
    /// The job's host asked every client to wait until then (milliseconds since the epoch).
    var hostHold: (host: String, until: Int64)?
}

/// What settling needs besides the attempt itself: the files, the rules, and where to announce.
struct SettlementContext: Sendable {
    let files: DestinationFiles
    let partials: PartialFiles
    let retryPolicy: RetryPolicy
    /// How long a job with URL refresh waits for a new URL.
    let urlRefreshTimeout: Duration
    let events: WebhookEvents
    let metrics: Metrics
    let logger: Logger
    /// Tells event streams about a committed state change.
    let publish: @Sendable (Download) -> Void
    /// Called after a transaction recorded webhook events.
    let eventsRecorded: @Sendable () -> Void
    /// Reads a job as stored now (a completion that could not be committed asks what became of it).
    let read: @Sendable (String) throws -> Download?
    /// Where uploads' sources are, for `deleteSource`; nil where the service takes no uploads.
    var sources: UploadSources? = nil
    /// What a watch's check tells its watch; nil where the service keeps no watches.
    var watches: WatchChecks? = nil
}

/// Settles one finished transfer attempt: completes, retries or fails the job, each as a
/// compare-and-set on `running` that also records the job's webhook event.
struct Settlement {
    let context: SettlementContext
    let job: Download
    let result: TransferResult
    let startedAt: Int64
    let now: Int64
    /// In 0..<1, spreads retries.
    let jitter: Double
    /// The job's `checksumURL` as fetched before this attempt's download.
    var digestFile: DigestFile? = nil
    /// Whether the attempt asked the job's URL: one that ended at its digest file says nothing
    /// about that URL, so a retry stays on it rather than moving to the next mirror.
    var reachedURL = true

    /// The longest a Retry-After holds a host.
    static let maxHostHold: Duration = .seconds(86400)

    private var logger: Logger { context.logger }
    private var partialPath: String { context.partials.path(job.id) }

    func settle() -> JobWrite {
        if let write = settleNotModified() { return write }
        if result.failure == nil, let digest = result.sha256 {
            return complete(digest: digest)
        }
        if case .storage(let failure)? = result.failure, let write = settleObject(failure) { return write }
        guard let outcome = AttemptOutcome(result) else { return stopped(.shutdown) }
        if let deadline = job.resourceDeadline, now >= deadline { return resourceTimedOut() }
        let retryAfter = result.retryAfter.map { Duration.milliseconds(Int64($0 * 1000)) }
        switch context.retryPolicy.decide(outcome, history: history(counting: !outcome.isOutage), retryAfter: retryAfter, jitter: jitter) {
        case .finish:
            // A 2xx without a digest means the body never reached the file; try again.
            return retry(after: context.retryPolicy.delay(afterAttempt: job.attemptsInBudget, retryAfter: nil, jitter: 0.5),
                  cause: DownloadError(code: ErrorCode.fileError, message: "the response body was not stored"))
        case .retry(let after, let cause, let outage):
            if let deadline = job.resourceDeadline, now + after.wholeMilliseconds >= deadline { return resourceTimedOut() }
            var write = retry(after: after, cause: cause, outage: outage, nextURL: !job.mirrors.isEmpty && reachedURL)
            if let retryAfter, result.httpStatus == 429 || result.httpStatus == 503 {
                // Asked of every client, not just this job: the whole host:port waits.
                let until = now + min(retryAfter, Self.maxHostHold).wholeMilliseconds
                write.changes.append(.holdHost(job.hostKey, until: until))
                write.hostHold = (job.hostKey, until)
            }
            return write
        case .waitForDisk(let cause):
            return waitForDisk(cause)
        case .fail(let error):
            if outcome.isMissingFile, job.mirrorMisses + 1 < job.allURLs.count {
                // Gone from this URL; the next one may have it (the job fails once every URL said so).
                return retry(after: .zero, cause: error, nextURL: true, missed: true)
            }
            if job.urlRefresh, case .http(let status) = outcome, [401, 403, 410].contains(status) { return awaitURL(error) }
            return fail(error)
        }
    }

    /// The job's attempts as the retry policy weighs them; the attempt that just ended counts
    /// against the budget unless it was an outage (or met a full disk).
    private func history(counting: Bool) -> AttemptHistory {
        let counted = job.attemptsInBudget - job.outageAttempts - (counting ? 0 : 1)
        let lastProgress = result.bytesThisAttempt > 0 ? now : (job.progressAt ?? startedAt)
        return AttemptHistory(counted: counted, total: job.attempts, sinceProgress: .milliseconds(now - lastProgress),
                              sinceDiskFull: .milliseconds(job.diskFullSince.map { now - $0 } ?? 0))
    }

    /// The disk filled: the job goes back to the queue with its partial data and starts again
    /// when the scheduler sees free space (`waitingFor: diskSpace`).
    private func waitForDisk(_ cause: DownloadError) -> JobWrite {
        var queued = attemptRecorded()
        queued.state = .queued
        queued.error = cause
        queued.runAt = max(now, job.earliestBeginDate ?? now)
        queued.nextAttemptAt = nil
        queued.diskFullSince = job.diskFullSince ?? now
        queued.outageAttempts += 1
        logger.info("download waits for disk space", metadata: ["download.id": "\(job.id)", "bytes": "\(result.bytesOnDisk)"])
        return transition(queued, attempt: attempt("retry", error: cause))
    }

    /// `resourceTimeout` has passed since the first attempt, or will have before the next.
    private func resourceTimedOut() -> JobWrite {
        fail(DownloadError(code: ErrorCode.timeout, message: "not completed within its resourceTimeout of \(job.resourceTimeout ?? "")"))
    }

    /// The digest file at `checksumURL` answered with something other than a digest file.
    func digestFileUnavailable(_ problem: String) -> JobWrite {
        fail(digestFileError(problem))
    }

    private func digestFileError(_ problem: String) -> DownloadError {
        DownloadError(code: ErrorCode.checksumUnavailable, message: "the digest file at \(job.checksumURL ?? "") \(problem)")
    }

    /// The deadline of a job waiting for a new URL has passed without one.
    func urlExpired() -> JobWrite {
        fail(DownloadError(code: ErrorCode.urlExpired, message: "no new URL came within \(context.urlRefreshTimeout)"))
    }

    /// URL refresh: the origin refused an expired link. The job keeps its partial data and waits,
    /// queued, for a PATCH with a new URL — until its deadline, when the scheduler fails it.
    private func awaitURL(_ refusal: DownloadError) -> JobWrite {
        var waiting = attemptRecorded()
        waiting.state = .queued
        waiting.error = refusal
        waiting.nextAttemptAt = nil
        waiting.awaitingURLSince = now
        waiting.runAt = now + context.urlRefreshTimeout.wholeMilliseconds
        logger.info("download waits for a new URL", metadata: ["download.id": "\(job.id)", "http.status": "\(result.httpStatus ?? 0)"])
        let context = context
        let change = StoreChange.update(waiting, expecting: [.running], events: [context.events.urlExpired(waiting, now: now)],
                                        attempt: attempt("url_expired", error: refusal))
        return JobWrite(changes: [change]) { results in
            guard results[0] else { return }
            context.eventsRecorded()
            context.publish(waiting)
        }
    }

    /// The transfer was stopped on purpose: by a cancel, a pause, or fetchd shutting down.
    func stopped(_ reason: StopReason) -> JobWrite {
        switch reason {
        case .cancel:
            context.partials.remove(job.id)
            return JobWrite(changes: [.attempt(attempt("cancelled"), of: job.id)])
        case .pause:
            return JobWrite(changes: [
                job.ranges.isEmpty
                    ? .progress(id: job.id, bytesReceived: result.bytesOnDisk, bytesExpected: result.bytesExpected, validator: result.validator)
                    : .ranges(id: job.id, ranges: job.ranges, bytesReceived: result.bytesOnDisk, bytesExpected: result.bytesExpected,
                              validator: result.validator),
                .attempt(attempt("paused"), of: job.id),
            ])
        case .shutdown, .requestChanged, .sizeMismatch:
            // Back to the queue, due at once, to go on from the partial data (after a changed
            // request, with the new one and If-Range).
            var queued = attemptRecorded()
            queued.state = .queued
            queued.runAt = now
            queued.error = job.error
            // Cut by fetchd or a client's change, not by the origin: not counted against the retry budget.
            queued.outageAttempts += 1
            return transition(queued, attempt: attempt(reason == .shutdown ? "interrupted" : "changed"))
        case .unclaimed:
            // Never asked for (`Scheduler.finished` settles nothing of a job this node did not claim).
            return JobWrite(changes: [])
        }
    }

    private func complete(digest: String) -> JobWrite {
        let destination = job.destination.withSegments
        let target = destination.isDirectory
            ? destination.file(named: FileName.choose(contentDisposition: result.contentDisposition, finalURL: result.effectiveURL ?? job.currentURL))
            : destination
        if let problem = verify(digest, fileName: target.fileName) { return fail(problem) }
        // A watch's check that got the very file it has: nothing to place.
        if isWatchedFileAgain(digest) { return unchangedCheck() }
        switch place(target, overwrite: job.overwrite, renameOnConflict: job.renameOnConflict) {
        case .failed(let error):
            return fail(error)
        case .placed(let directory, let name):
            let placed = Destination(stored: target.pathInDirectory(named: name))
            var done = attemptRecorded()
            done.state = .completed
            done.sha256 = digest
            done.bytesExpectedFromOrigin = done.bytesExpectedFromOrigin ?? result.bytesOnDisk
            done.error = nil
            done.finishedAt = now
            done.path = placed.path
            done.ranges = []
            let (job, context, partialPath, bytes) = (job, context, partialPath, result.bytesOnDisk)
            var write = terminal(done, attempt: attempt("completed")) { committed in
                if committed {
                    context.partials.remove(job.id)
                    context.logger.info("download completed", metadata: ["download.id": "\(job.id)", "bytes": "\(bytes)"])
                } else {
                    // Cancelled or paused while finishing: take the file back out. Only a job known to
                    // be cancelled loses its data; a paused one keeps it, and so does one whose state
                    // could not be read (the next start removes data no live job owns).
                    context.files.unplace(partial: partialPath, destination: placed)
                    if Self.isCancelled(job.id, context: context) { context.partials.remove(job.id) }
                }
            }
            write.placedIn = directory
            return write
        }
    }

    /// The file's digests against every digest the job expects: `sha256`, `checksum`, and the
    /// digest file's line for `fileName` (or its only line). Nil when all match.
    enum Placement {
        case placed(directory: PlacedDirectory, name: String)
        case failed(DownloadError)
    }

    /// Links the partial file in at `target` (see `DestinationFiles.place`), or says why it cannot be.
    func place(_ target: Destination, overwrite: Bool, renameOnConflict: Bool = false) -> Placement {
        switch context.files.place(partial: partialPath, destination: target, jobID: job.id, overwrite: overwrite,
                                   renameOnConflict: renameOnConflict) {
        case .success((let directory, let name)): .placed(directory: directory, name: name)
        case .failure(.exists): .failed(DownloadError(code: ErrorCode.destinationExists, message: "a file appeared at the destination before completion"))
        case .failure(.invalid(let message)): .failed(DownloadError(code: ErrorCode.invalidDestination, message: "the destination \(message)"))
        case .failure(.diskFull): .failed(DownloadError(code: ErrorCode.diskFull, message: "no space left to place the file"))
        case .failure(.io(let message)): .failed(DownloadError(code: ErrorCode.fileError, message: message))
        }
    }

    func verify(_ sha256: String, fileName: String) -> DownloadError? {
        var expected = [job.expectedSHA256.map { Checksum(algorithm: .sha256, hex: $0) }, job.checksum].compactMap { $0 }
        if job.checksumURL != nil {
            switch digestFile.map({ $0.checksum(for: fileName) }) {
            case .success(let checksum)?: expected.append(checksum)
            case .failure(let problem)?:
                return digestFileError(problem.message)
            case nil:
                return digestFileError("was not fetched")
            }
        }
        for checksum in expected {
            let name = checksum.algorithm.rawValue
            guard let actual = checksum.algorithm == .sha256 ? sha256 : result.extraDigest else {
                // Only a digest file whose lines mix algorithms asks for one that was not computed.
                return digestFileError("mixes algorithms: the file's \(name) was not computed")
            }
            if actual != checksum.hex {
                return DownloadError(code: ErrorCode.checksumMismatch, message: "the file's \(name) is \(actual), expected \(checksum.hex)")
            }
        }
        return nil
    }

    private static func isCancelled(_ id: String, context: SettlementContext) -> Bool {
        do {
            return try context.read(id)?.state == .cancelled
        } catch {
            context.logger.error("cannot read the job's state; its partial data is kept", metadata: ["download.id": "\(id)", "error": "\(error)"])
            return false
        }
    }

    /// Back to the queue; with `nextURL`, the next attempt goes to the job's next URL, round the
    /// list (`missed`: this one answered 404 or 410).
    func retry(after delay: Duration, cause: DownloadError, outage: Bool = false, nextURL: Bool = false,
                       missed: Bool = false) -> JobWrite {
        var queued = attemptRecorded()
        if nextURL { queued = onNextURL(queued, missed: missed) }
        queued.state = .queued
        queued.error = cause
        if outage { queued.outageAttempts += 1 }
        queued.nextAttemptAt = now + delay.wholeMilliseconds
        queued.runAt = max(queued.nextAttemptAt ?? now, job.earliestBeginDate ?? now)
        logger.info("download will retry", metadata: [
            "download.id": "\(job.id)", "error.code": "\(cause.code)", "retry.in": "\(delay)", "http.status": "\(result.httpStatus ?? 0)",
        ])
        return transition(queued, attempt: attempt("retry", error: cause))
    }

    func fail(_ error: DownloadError) -> JobWrite {
        var failed = attemptRecorded()
        failed.state = .failed
        failed.error = error
        failed.finishedAt = now
        logger.info("download failed", metadata: ["download.id": "\(job.id)", "error.code": "\(error.code)", "http.status": "\(result.httpStatus ?? 0)"])
        // Data a retry can go on from is kept (until the retry, or until retention prunes the job);
        // other data is of no use now, and removing it first frees the space a full disk needs for the commit.
        // (A watch's failed check is not retried: the next check is a job of its own.)
        if !error.isResumable(httpStatus: failed.httpStatus) || job.watch != nil {
            context.partials.remove(job.id)
            failed.bytesReceived = 0
            failed.ranges = []
        }
        return terminal(failed, attempt: attempt("failed", error: error))
    }

    /// The attempt's record, counted in the metrics as it is made.
    func attempt(_ outcome: String, error: DownloadError? = nil) -> AttemptRecord {
        let metrics = context.metrics
        metrics.increment("fetchd_attempts_total", labels: Metrics.labels(["outcome": outcome]))
        if job.upload != nil {
            metrics.increment("fetchd_uploaded_bytes_total", by: Double(result.bytesSent))
        } else {
            metrics.increment("fetchd_downloaded_bytes_total", by: Double(result.bytesThisAttempt))
        }
        metrics.observe("fetchd_transfer_duration_seconds", seconds: Double(now - startedAt) / 1000, bounds: Metrics.transferBuckets)
        return AttemptRecord(number: job.attempts, startedAt: startedAt, endedAt: now, outcome: outcome, error: error,
                      httpStatus: result.httpStatus, bytesTransferred: result.bytesThisAttempt, bytesOnDisk: result.bytesOnDisk,
                      url: job.currentURL)
    }

    /// The job with what this attempt learned: status, sizes and the validator of the partial data.
    func attemptRecorded() -> Download {
        var updated = job
        updated.httpStatus = result.httpStatus ?? job.httpStatus
        updated.bytesReceived = result.bytesOnDisk
        updated.bytesExpectedFromOrigin = result.bytesExpected ?? job.bytesExpectedFromOrigin
        updated.validator = result.validator ?? (result.bytesOnDisk > 0 ? job.validator : nil)
        if result.bytesThisAttempt > 0 {
            updated.progressAt = now
            if result.failure != .diskFull { updated.diskFullSince = nil }
        }
        return updated
    }

    /// The job moved on to its next URL. Its partial data carries over only when a digest can prove
    /// the bytes are of the same file (and the size is known, to be checked against the new URL's):
    /// it resumes there without If-Range (an empty validator); otherwise it starts from byte 0.
    private func onNextURL(_ job: Download, missed: Bool) -> Download {
        var moved = job
        moved.mirrorIndex = (job.mirrorIndex + 1) % job.allURLs.count
        moved.mirrorMisses = missed ? job.mirrorMisses + 1 : 0
        if job.expectedSHA256 != nil || job.checksum != nil || job.checksumURL != nil, job.bytesExpectedFromOrigin != nil {
            if job.bytesReceived > 0 { moved.validator = "" }
        } else {
            context.partials.remove(job.id)
            moved.bytesReceived = 0
            moved.validator = nil
            moved.ranges = []
        }
        logger.info("download moves to its next URL", metadata: [
            "download.id": "\(job.id)", "url.index": "\(moved.mirrorIndex)", "keeps.bytes": "\(moved.bytesReceived)",
        ])
        return moved
    }

    /// A terminal transition with its webhook event (and `session.finished` if it was the session's
    /// last live job); `then` learns whether it was committed.
    func terminal(_ download: Download, attempt: AttemptRecord, then: @escaping (Bool) -> Void = { _ in }) -> JobWrite {
        if download.watch != nil { return checkEnded(download, attempt: attempt, then: then) }
        let (events, context, now) = (context.events, context, now)
        let change = StoreChange.update(download, expecting: [.running], events: [events.terminal(download, now: now)], attempt: attempt) {
            [events.sessionFinished($0, now: now)]
        }
        return JobWrite(changes: [change]) { results in
            if results[0] {
                context.eventsRecorded()
                context.publish(download)
            }
            then(results[0])
        }
    }

    /// A non-terminal transition from `running` (back to the queue).
    private func transition(_ download: Download, attempt: AttemptRecord) -> JobWrite {
        let publish = context.publish
        return JobWrite(changes: [.update(download, expecting: [.running], attempt: attempt)]) { results in
            if results[0] { publish(download) }
        }
    }
}
