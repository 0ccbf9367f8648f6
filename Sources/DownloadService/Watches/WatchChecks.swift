import DownloadCore
import Persistence

/// What a watch's check writes to its watch: the check's outcome, the watch's events, and the
/// check after it — each as a `StoreChange.watch` committed with the check's own transition.
struct WatchChecks: Sendable {
    let events: WebhookEvents
    let ids: IDSource
    let times: CheckTimes

    /// How a check ended, as its watch records it.
    struct Ending {
        var result: WatchResult
        var error: DownloadError? = nil
        /// The validators the origin sent with its answer (kept when it sent none).
        var etag: String? = nil
        var lastModified: String? = nil
        /// The new file's digest, for `changed`.
        var sha256: String? = nil
    }

    /// The watch's change once its check ended so at `now`. `job` is the check as its transition
    /// writes it; the change applies only if that transition does, and only while the watch still
    /// counts on this check. An unchanged check goes on as the same job, due at the watch's next
    /// time; after a change or a failure the next check is a new job.
    func ended(_ job: Download, _ ending: Ending, now: Int64) -> StoreChange? {
        guard let link = job.watch else { return nil }
        let (events, ids, times) = (events, ids, times)
        return .watch(WatchChange(id: link.id, afterPrevious: true) { watch, _ in
            guard watch.checkID == job.id else { return nil }
            var next = watch
            next.checks += 1
            next.lastCheckedAt = now
            next.lastResult = ending.result
            next.lastError = ending.error
            next.etag = ending.etag ?? watch.etag
            next.lastModified = ending.lastModified ?? watch.lastModified
            next.nextCheckAt = watch.nextCheck(after: now)
            var recorded: [WebhookEvent] = []
            switch ending.result {
            case .changed:
                next.changes += 1
                next.lastChangedAt = now
                next.sha256 = ending.sha256
                recorded.append(events.watchChanged(next, download: job, previousSHA256: watch.sha256, now: now))
            case .failed where watch.lastResult != .failed:
                recorded.append(events.watchFailed(next, session: job.session, now: now))
            case .failed, .unchanged:
                break
            }
            guard let due = next.nextCheckAt else { return WatchWrite(watch: next, events: recorded, now: now) }
            times.due(at: due)
            if ending.result == .unchanged {
                return WatchWrite(watch: next, events: recorded, reschedule: (job.id, due), now: now)
            }
            let check = Self.check(of: next, id: ids.next(now: now), runAt: due, now: now)
            next.checkID = check?.id
            return WatchWrite(watch: next, events: recorded, newCheck: check, now: now)
        })
    }

    /// A check for a watch left without a live one (its check ended outside a settlement of its
    /// own), due at the watch's next time, or now if that has passed.
    func renewal(of id: String, now: Int64) -> StoreChange {
        let ids = ids
        return .watch(WatchChange(id: id) { watch, checkState in
            guard watch.state == .active, checkState?.isTerminal ?? true else { return nil }
            var next = watch
            let due = max(now, watch.nextCheckAt ?? now)
            guard let check = Self.check(of: watch, id: ids.next(now: now), runAt: due, now: now) else { return nil }
            next.checkID = check.id
            next.nextCheckAt = due
            return WatchWrite(watch: next, newCheck: check, now: now)
        })
    }

    /// The watch's check job due at `runAt` (paused with a paused watch), given until the check
    /// after it to finish: a check that cannot reach its origin fails then (`timeout`) rather than
    /// holding the watch through its next times. Nil when the watch's fields no longer pass.
    static func check(of watch: Watch, id: String, runAt: Int64, now: Int64) -> Download? {
        guard let spec = watch.validSpec else { return nil }
        var job = spec.check(id: id, link: watch.link, runAt: runAt, now: now)
        if let following = spec.timing.nextCheck(after: runAt, anchor: watch.createdAt, spread: WatchTiming.spread(of: watch.id)) {
            job.resourceTimeout = "\(max(following - runAt, 1000))ms"
        }
        if watch.state == .paused { job.state = .paused }
        return job
    }
}
