import DownloadCore

/// A state change a client asks of a job — cancel, pause, resume, retry — as the download
/// endpoints and a watch's actions on its check both make it: to `target` from a state in
/// `from` (a job already in one of `unchangedIn` is left as it is), what else it changes, and
/// what the scheduler is told once it is committed.
struct ClientTransition: Sendable {
    let target: DownloadState
    let from: Set<DownloadState>
    let unchangedIn: Set<DownloadState>
    let change: @Sendable (inout Download, Int64) -> Void
    let committed: @Sendable (Scheduler, Download) -> Void

    /// `current` as the transition writes it at `now`.
    func applied(to current: Download, now: Int64) -> Download {
        var updated = current
        updated.state = target
        change(&updated, now)
        return updated
    }

    static let cancel = ClientTransition(target: .cancelled, from: [.queued, .running, .paused], unchangedIn: [.cancelled]) { job, now in
        job.finishedAt = now
        job.nextAttemptAt = nil
    } committed: { scheduler, job in
        scheduler.stop(job.id, reason: .cancel)
    }

    static let pause = ClientTransition(target: .paused, from: [.queued, .running], unchangedIn: [.paused]) { job, _ in
        job.nextAttemptAt = nil
    } committed: { scheduler, job in
        scheduler.stop(job.id, reason: .pause)
    }

    static let resume = ClientTransition(target: .queued, from: [.paused], unchangedIn: [.queued, .running]) { job, now in
        job.runAt = max(now, job.earliestBeginDate ?? now)
        job.error = nil
    } committed: { scheduler, _ in
        scheduler.poke()
    }

    /// A failed job goes back to the queue with a fresh retry budget (`attempts` keeps counting),
    /// going on from its partial data where its failure left some.
    static let retry = ClientTransition(target: .queued, from: [.failed], unchangedIn: []) { job, now in
        job.runAt = max(now, job.earliestBeginDate ?? now)
        job.error = nil
        job.finishedAt = nil
        job.nextAttemptAt = nil
        job.sha256 = nil
        job.attemptsBeforeRetry = job.attempts
        job.outageAttempts = 0
        job.diskFullSince = nil
        job.progressAt = nil
    } committed: { scheduler, job in
        scheduler.jobStored(runAt: job.runAt)
    }
}
