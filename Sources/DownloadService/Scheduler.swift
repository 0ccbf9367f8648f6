import Dispatch
import DownloadCore
import Logging
import Store
import Synchronization
import Transfer

/// Decides which queued jobs run, starts their transfers and settles how each attempt ended.
/// One timer for the next due job; nothing polls while idle.
final class Scheduler: @unchecked Sendable {  // all mutable state below is touched only on `queue`
    enum StopReason { case cancel, pause, shutdown }

    struct Active {
        var download: Download
        var transferID: TransferID?
        var stopReason: StopReason?
        var persistedAt: Int64
        var attemptStartedAt: Int64
    }

    let queue = DispatchQueue(label: "fetchd.scheduler")
    let store: Store
    let engine: TransferEngine
    let configuration: Configuration
    let events: WebhookEvents
    let hub: EventHub
    let files: DestinationFiles
    let partials: PartialFiles
    let clock: Clock
    let logger: Logger
    let policy: RetryPolicy
    /// Called after a transaction recorded webhook events.
    let onEventsRecorded: @Sendable () -> Void
    /// Bytes on disk of running transfers, for API reads between persisted updates.
    let liveBytes = Mutex<[String: Int64]>([:])
    let runningCount = Atomic<Int>(0)
    /// Running transfers per "host:port"; written on `queue`, read by the API to explain waits.
    let perHost = Mutex<[String: Int]>([:])

    private var active: [String: Active] = [:]
    private lazy var timer = DueTimer(queue: queue, leeway: .milliseconds(5)) { [unowned self] in self.schedule() }
    private var stopping = false
    private var drained: CheckedContinuation<Void, Never>?

    /// How often running jobs' progress is written to the database.
    static let progressPersistInterval: Int64 = 1000

    init(store: Store, engine: TransferEngine, configuration: Configuration, events: WebhookEvents, hub: EventHub,
         clock: Clock, logger: Logger, onEventsRecorded: @escaping @Sendable () -> Void) {
        self.hub = hub
        self.store = store
        self.engine = engine
        self.configuration = configuration
        self.events = events
        self.files = DestinationFiles(root: configuration.downloadRoot)
        self.partials = PartialFiles(directory: configuration.partialDirectory)
        self.clock = clock
        self.logger = logger
        self.policy = RetryPolicy(maxAttempts: configuration.maxAttempts, baseDelay: configuration.retryBaseDelay)
        self.onEventsRecorded = onEventsRecorded
    }

    func isHostFull(_ hostKey: String) -> Bool {
        perHost.withLock { $0[hostKey, default: 0] } >= configuration.maxTransfersPerHost
    }

    func isFull() -> Bool {
        runningCount.load(ordering: .relaxed) >= configuration.maxTransfers
    }

    func poke() {
        queue.async { self.schedule() }
    }

    /// Stops a job's transfer if it runs; a cancelled job's partial data is removed either way.
    func stop(_ id: String, reason: StopReason) {
        queue.async {
            if var running = self.active[id], let transferID = running.transferID {
                running.stopReason = reason
                self.active[id] = running
                self.engine.cancel(transferID)
            } else if reason == .cancel {
                self.partials.remove(id)
            }
        }
    }

    /// Stops every transfer, keeping partial data; the jobs go back to `queued` for the next start.
    func shutdown(timeout: Double) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.stopping = true
                self.timer.cancel()
                guard !self.active.isEmpty else { return continuation.resume() }
                self.drained = continuation
                for (id, running) in self.active {
                    self.active[id]?.stopReason = .shutdown
                    if let transferID = running.transferID { self.engine.cancel(transferID) }
                }
                self.queue.asyncAfter(deadline: .now() + timeout) { self.resumeDrained() }
            }
        }
    }

    private func resumeDrained() {
        drained?.resume()
        drained = nil
    }

    // MARK: - Claiming work

    private func schedule() {
        guard !stopping else { return }
        let now = clock.now()
        do {
            var free = configuration.maxTransfers - active.count
            if free > 0 {
                // Ask for more than the free slots: some candidates may wait for their host.
                for candidate in try store.dueJobs(now: now, limit: free * 4 + 32) where free > 0 {
                    guard active[candidate.id] == nil, !isHostFull(candidate.hostKey) else { continue }
                    var job = candidate
                    job.state = .running
                    job.attempts += 1
                    job.startedAt = job.startedAt ?? now
                    job.nextAttemptAt = nil
                    guard try store.update(job, expecting: [.queued]) else { continue }
                    hub.publish(job.id, .state(job))
                    start(job, now: now)
                    free -= 1
                }
            }
            timer.arm(at: try store.nextRunAt(after: now), now: now)
        } catch {
            logger.error("scheduling failed", metadata: ["error": "\(error)"])
            timer.arm(at: now + 1000, now: now)
        }
    }


    private func start(_ job: Download, now: Int64) {
        let id = job.id
        let partialPath = partials.path(id)
        let resumeFrom = partials.size(id)
        var request = TransferRequest(url: job.url, sink: .file(path: partialPath, resumeValidator: resumeFrom > 0 ? job.validator : nil))
        request.headers = job.headers.map { ($0.name, $0.value) }
        request.maxBytes = configuration.maxDownloadBytes
        request.stallTimeout = configuration.stallTimeout
        request.addressPolicy = configuration.addressPolicy
        active[id] = Active(download: job, transferID: nil, stopReason: nil, persistedAt: now, attemptStartedAt: now)
        perHost.withLock { $0[job.hostKey, default: 0] += 1 }
        runningCount.add(1, ordering: .relaxed)
        logger.info("transfer started", metadata: ["download.id": "\(id)", "attempt": "\(job.attempts)", "resume.offset": "\(resumeFrom)"])
        let transferID = engine.start(
            request,
            onProgress: { progress in self.queue.async { self.progressed(id, progress) } },
            onComplete: { result in self.queue.async { self.finished(id, result) } })
        active[id]?.transferID = transferID
    }

    private func progressed(_ id: String, _ progress: TransferProgress) {
        guard var running = active[id], running.stopReason == nil else { return }
        // The first time a validator is seen it is saved at once: a crash from here on must resume with it.
        let newValidator = progress.validator != running.download.validator ? progress.validator : nil
        if let newValidator { running.download.validator = newValidator }
        liveBytes.withLock { $0[id] = progress.bytesOnDisk }
        hub.publish(id, .progress(bytesReceived: progress.bytesOnDisk, bytesExpected: progress.bytesExpected ?? running.download.bytesExpected))
        let now = clock.now()
        guard newValidator != nil || now - running.persistedAt >= Self.progressPersistInterval else {
            active[id] = running
            return
        }
        running.persistedAt = now
        active[id] = running
        do {
            try store.updateProgress(id: id, bytesReceived: progress.bytesOnDisk, bytesExpected: progress.bytesExpected, validator: newValidator)
        } catch {
            logger.warning("progress not saved", metadata: ["download.id": "\(id)", "error": "\(error)"])
        }
    }

    private func finished(_ id: String, _ result: TransferResult) {
        guard let running = active.removeValue(forKey: id) else { return }
        perHost.withLock { counts in
            let remaining = counts[running.download.hostKey, default: 1] - 1
            counts[running.download.hostKey] = remaining > 0 ? remaining : nil
        }
        runningCount.subtract(1, ordering: .relaxed)
        liveBytes.withLock { _ = $0.removeValue(forKey: id) }
        let outcome = Settlement(scheduler: self, job: running.download, result: result, startedAt: running.attemptStartedAt, now: clock.now())
        if let reason = running.stopReason ?? (result.failure == .cancelled ? .shutdown : nil) {
            outcome.stopped(reason)
        } else {
            outcome.settle()
        }
        if stopping {
            if active.isEmpty { resumeDrained() }
        } else {
            schedule()
        }
    }
}
