import DownloadCore
import Transfer

extension AttemptRunner {
    /// Sends an upload job's source to `url`; one that cannot be sent (changed, gone, unreadable)
    /// settles at once. A job that reaches a node without uploads fails as a refused source would.
    func startUpload(_ id: String, plan: UploadPlan, to url: String) {
        guard var attempt = active[id] else { return }
        guard let uploads else { return refuseUpload(id, .sourceUnreadable("this node takes no uploads")) }
        if let checksum = attempt.download.checksum, attempt.sourceSHA256 == nil {
            attempt.verifyingSource = true
            let refusal = uploads.verify(&attempt, plan: plan, checksum: checksum) { checked in
                self.queue.async { self.sourceChecked(id, plan: plan, url: url, checked) }
            }
            active[id] = attempt
            if let refusal { refuseUpload(id, refusal) }
            return
        }
        let refusal = uploads.start(
            &attempt, plan: plan, url: url, now: clock.now(), resourceChanged: { self.active[id]?.download.objectUpload = $0 },
            onProgress: { progress in self.queue.async { self.uploadProgressed(id, progress.bytesSent) } },
            onComplete: { result in self.queue.async { self.finished(id, result) } })
        active[id] = attempt
        if let refusal { refuseUpload(id, refusal) }
    }

    /// The source was checked against the job's checksum: sent if it matched and the attempt was
    /// not stopped meanwhile.
    private func sourceChecked(_ id: String, plan: UploadPlan, url: String, _ checked: Result<String, UploadAttempts.Refusal>) {
        guard var attempt = active[id] else { return }
        attempt.verifyingSource = false
        if case .success(let sha256) = checked { attempt.sourceSHA256 = sha256 }
        active[id] = attempt
        if attempt.stopReason != nil { return finished(id, TransferResult(failure: .cancelled)) }
        if case .failure(let refusal) = checked { return refuseUpload(id, refusal) }
        startUpload(id, plan: plan, to: url)
    }

    /// An upload's bytes sent, shown live (`bytesSent`) and saved now and then as a download's
    /// bytes received are.
    private func uploadProgressed(_ id: String, _ sent: Int64) {
        guard var attempt = active[id], attempt.stopReason == nil, let plan = attempt.download.upload else { return }
        report(id, session: attempt.download.session, bytes: sent, expected: plan.pin.size, direction: .upload)
        let now = clock.now()
        guard now - attempt.persistedAt >= Self.progressPersistInterval else { return }
        attempt.persistedAt = now
        active[id] = attempt
        completer.add(JobWrite(changes: [.progress(id: id, bytesReceived: sent, bytesExpected: plan.pin.size, validator: nil)]))
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
