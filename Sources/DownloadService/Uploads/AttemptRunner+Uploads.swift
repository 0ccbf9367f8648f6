import DownloadCore
import Transfer

extension AttemptRunner {
    /// Sends an upload job's source to `url`; one that cannot be sent (changed, gone, unreadable)
    /// settles at once. A job that reaches a node without uploads fails as a refused source would.
    func startUpload(_ id: String, plan: UploadPlan, to url: String) {
        guard var attempt = active[id] else { return }
        guard let uploads else { return refuseUpload(id, .sourceUnreadable("this node takes no uploads")) }
        let refusal = uploads.start(
            &attempt, plan: plan, url: url, now: clock.now(),
            onProgress: { _ in },
            onComplete: { result in self.queue.async { self.finished(id, result) } })
        active[id] = attempt
        if let refusal { refuseUpload(id, refusal) }
    }

    private func refuseUpload(_ id: String, _ refusal: UploadAttempts.Refusal) {
        guard let attempt = active[id] else { return }
        release(attempt)
        let now = clock.now()
        let outcome = Settlement(context: settlement, job: attempt.download, result: TransferResult(), startedAt: attempt.attemptStartedAt,
                                 now: now, jitter: 0)
        completer.add(outcome.uploadRefused(refusal))
        completer.attemptEnded()
    }
}
