extension Download {
    /// The job as a claim leaves it: running, one attempt more, its first start and progress
    /// clock set once, no retry pending.
    public func startingAttempt(now: Int64) -> Download {
        var job = self
        job.state = .running
        job.attempts += 1
        job.startedAt = job.startedAt ?? now
        job.progressAt = job.progressAt ?? now
        job.nextAttemptAt = nil
        return job
    }
}
