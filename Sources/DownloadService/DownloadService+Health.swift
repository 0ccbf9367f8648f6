import Dispatch

extension DownloadService {
    /// Whether the scheduler's queue and the store's writer answer, with what runs and waits, for
    /// the service manager's watchdog (`ServiceNotifier`). Blocks while either is stuck: that is
    /// the answer.
    public func health() -> ServiceHealth {
        scheduler.queue.sync {}
        guard store.isWritable() else { return ServiceHealth(alive: false, status: "the database is not writable") }
        let queued: String
        do {
            let depth = try store.queueDepth()
            queued = "\(depth.due + depth.retry + depth.earliestBeginDate)"
        } catch {
            // A status line only; the next ping asks again. The error is shown, not taken for an empty queue.
            queued = "unknown (\(error))"
        }
        return ServiceHealth(alive: true, status: "running \(scheduler.runningTransfers), queued \(queued)")
    }

    /// Holds the scheduler's queue until the returned function is called: the end-to-end tests'
    /// stand-in for a hung scheduler (`FETCHD_TEST_SIGNALS`).
    public func holdScheduler() -> @Sendable () -> Void {
        let released = DispatchSemaphore(value: 0)
        scheduler.queue.async { released.wait() }
        return { released.signal() }
    }
}
