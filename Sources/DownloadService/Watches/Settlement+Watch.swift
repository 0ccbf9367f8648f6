import DownloadCore
import Persistence

/// How a watch's check settles: as any download, except that `304` or a body with the current
/// file's digest changes nothing, and that its end is told to its watch (`WatchChecks`) instead
/// of by `download.*` webhooks.
extension Settlement {
    /// A `304`: nothing is written; the check goes on, due at the watch's next time.
    func settleNotModified() -> JobWrite? {
        guard job.watch != nil, result.failure == nil, result.httpStatus == 304 else { return nil }
        return unchangedCheck()
    }

    /// Whether a watch's check got the very bytes its watch has (their digest): nothing is placed
    /// or stored, and the check counts as unchanged.
    func isWatchedFileAgain(_ digest: String?) -> Bool {
        guard let current = job.watch?.sha256 else { return false }
        return current == digest
    }

    /// The same job waits for the watch's next time (which the watch's change sets), its retry
    /// budget and its `resourceTimeout` starting over there; nothing is placed, no partial data kept.
    func unchangedCheck() -> JobWrite {
        context.partials.remove(job.id)
        var waiting = attemptRecorded()
        waiting.state = .queued
        waiting.error = nil
        waiting.bytesReceived = 0
        waiting.validator = nil
        waiting.ranges = []
        waiting.startedAt = nil
        waiting.progressAt = nil
        waiting.nextAttemptAt = nil
        waiting.outageAttempts = 0
        waiting.attemptsBeforeRetry = waiting.attempts
        // Until the watch's change, in the same transaction, sets its next time.
        waiting.runAt = now + Self.unsetCheckDelay
        waiting.earliestBeginDate = waiting.runAt
        waiting.watch?.etag = validators.etag ?? job.watch?.etag
        waiting.watch?.lastModified = validators.lastModified ?? job.watch?.lastModified
        var changes: [StoreChange] = [.update(waiting, expecting: [.running])]
        if let watchChange = context.watches?.ended(waiting, WatchChecks.Ending(
            result: .unchanged, etag: validators.etag, lastModified: validators.lastModified), now: now) {
            changes.append(watchChange)
        }
        let publish = context.publish
        context.metrics.increment("fetchd_watch_checks_total", labels: Metrics.labels(["result": "unchanged"]))
        return JobWrite(changes: changes) { results in
            if results[0] { publish(waiting) }
        }
    }

    /// Never seen once committed: the watch's change moves the check to its next time.
    static let unsetCheckDelay: Int64 = 60_000

    /// A check that ended for good: completed (the file changed) or failed. Its watch records it,
    /// sends `watch.changed` or `watch.failed`, and makes the next check.
    func checkEnded(_ download: Download, attempt: AttemptRecord, then: @escaping (Bool) -> Void) -> JobWrite {
        let result: WatchResult = download.state == .completed ? .changed : .failed
        var changes: [StoreChange] = [.update(download, expecting: [.running], attempt: attempt)]
        let ending = WatchChecks.Ending(result: result, error: download.error, etag: validators.etag,
                                        lastModified: validators.lastModified, sha256: download.sha256)
        if let watchChange = context.watches?.ended(download, ending, now: now) { changes.append(watchChange) }
        let context = context
        context.metrics.increment("fetchd_watch_checks_total", labels: Metrics.labels(["result": result.rawValue]))
        return JobWrite(changes: changes) { results in
            if results[0] {
                if results.count > 1, results[1] { context.eventsRecorded() }
                context.publish(download)
            }
            then(results[0])
        }
    }

    /// The validators of the origin's answer.
    private var validators: (etag: String?, lastModified: String?) {
        (result.responseHeader("etag"), result.responseHeader("last-modified"))
    }
}
