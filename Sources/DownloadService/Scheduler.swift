import Dispatch
import DownloadCore
import Logging
import Persistence
import Synchronization
import Transfer

/// A running transfer's progress as last reported.
struct LiveProgress: Sendable, Equatable {
    var session: String
    var bytesReceived: Int64
    var bytesExpected: Int64?
}

/// Decides which queued jobs run, starts their transfers and settles how each attempt ended.
/// One timer for the next change of the queue; nothing polls while idle.
final class Scheduler: @unchecked Sendable {  // all mutable state below is touched only on `queue`
    /// Why a transfer was stopped on purpose: `requestChanged` is a client's new url, headers,
    /// mirrors or rate cap; `sizeMismatch` drops data carried over from another URL; `unclaimed` ends
    /// a transfer its pass started before the claim, which then did not commit (`abandon`).
    enum StopReason { case cancel, pause, shutdown, requestChanged, sizeMismatch, unclaimed }

    struct Active {
        var download: Download
        var transferID: TransferID?
        var stopReason: StopReason?
        var persistedAt: Int64
        var attemptStartedAt: Int64
        /// Holds one of the discretionary share of slots.
        var discretionary: Bool
        /// Bytes it still expects to write, counted against free disk space.
        var remainingBytes: Int64
        /// The job's `checksumURL` as fetched at the start of this attempt.
        var digestFile: DigestFile? = nil
        /// Connections it holds of its host's `maxTransfersPerHost`.
        var connections = 1
        /// A first connection that asks for the first part only, to go on over `connections` (see
        /// Scheduler+Ranges), until its response shows it stays alone.
        var mayUseRanges = false
        /// The attempt over several connections, when it runs so.
        var ranges: (any SegmentsRunning)?
        /// Bytes on disk when the attempt (over several connections) started.
        var bytesAtStart: Int64 = 0
        /// What the first connection's response said to name the file by, kept for the settlement
        /// of the ranges that followed it (a directory destination's file is named at placement).
        var firstResponse: (contentDisposition: String?, effectiveURL: String?)?
        /// Its body is in and its slot went to the next job; it settles behind (`bodyReceived`).
        var slotFreed = false
    }

    let queue = DispatchQueue(label: "fetchd.scheduler")
    private let store: any JobStore
    let transfers: any TransferRunning
    let template: TransferTemplate
    private let settlement: SettlementContext
    let partials: PartialFiles
    private let disk: DiskSpace
    let hub: EventHub
    let clock: Clock
    let logger: Logger
    let policy: SchedulingPolicy
    /// Progress of running transfers, for API reads between persisted updates and `GET /events`.
    let live = Mutex<[String: LiveProgress]>([:])
    /// What runs now, published after every change for the API's `waitingFor`.
    private let publishedLoad = Mutex(Load())

    var active: [String: Active] = [:]
    var load = Load()
    private lazy var timer = DueTimer(queue: queue, leeway: .milliseconds(5)) { [unowned self] in self.schedule() }
    private let passPending = Atomic<Bool>(false)
    /// When the timer fires next (milliseconds since the epoch; `.max` when disarmed). Set on the
    /// queue; `jobStored` reads it from the event loops.
    private let plannedPass = Atomic<Int64>(.max)
    private var timerDeadline: Int64 {
        get { plannedPass.load(ordering: .sequentiallyConsistent) }
        set { plannedPass.store(newValue, ordering: .sequentiallyConsistent) }
    }
    /// The earliest `runAt` of jobs stored since `considerNewJobs` last looked, and whether it is queued.
    private let earliestNewJob = Atomic<Int64>(.max)
    private let newJobsPending = Atomic<Bool>(false)
    /// Writes waiting for the commit at the queue's next turn, and whether an attempt ended since the last.
    lazy var pendingWrites = NextTurnBatch<JobWrite>(queue: queue) { [unowned self] in self.commit($0) }
    /// Writes whose commit failed (the database could not be written): committed again, before
    /// anything newer, until they are saved.
    private lazy var unsavedWrites = UnsavedBatch<JobWrite>(queue: queue, delay: .milliseconds(Int(Self.storeRetryInterval))) {
        [unowned self] in self.commit([])
    }
    private var attemptsEnded = false
    /// A transfer's body is in and its slot free: the next turn claims a job for it.
    private var passWanted = false
    /// The last scheduling pass failed in the store: the next one starts its transfers only once
    /// its claims are committed.
    private var lastPassFailed = false
    /// Whether the hosts held across a restart have been read from the store.
    private var backoffsRestored = false
    private var stopping = false
    private var drained: CheckedContinuation<Void, Never>?

    /// How often running jobs' progress is written to the database.
    static let progressPersistInterval: Int64 = 1000
    /// While a job waits for disk space, how often space is looked at again (nothing signals it).
    static let diskRecheckInterval: Int64 = 2000
    /// How soon a failed commit or scheduling pass is tried again.
    static let storeRetryInterval: Int64 = 1000

    init(store: any JobStore, transfers: any TransferRunning, template: TransferTemplate, settlement: SettlementContext,
         policy: SchedulingPolicy, disk: DiskSpace, hub: EventHub, clock: Clock, logger: Logger) {
        self.store = store
        self.transfers = transfers
        self.template = template
        self.settlement = settlement
        self.partials = settlement.partials
        self.policy = policy
        self.disk = disk
        self.hub = hub
        self.clock = clock
        self.logger = logger
    }

    /// Asks for a scheduling pass; many requests before it runs make one pass.
    func poke() {
        guard !passPending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { self.schedule() }
    }

    /// A job was stored that may run from `runAt`. Passes cost queries, so one runs only if the
    /// job may be due before the pass already planned: under a burst of far-future submissions
    /// the scheduler stays idle.
    func jobStored(runAt: Int64) {
        earliestNewJob.min(runAt, ordering: .sequentiallyConsistent)
        // Not due before the pass already planned: no look now, and no wake-up of the queue per
        // POST. `arm` reads `earliestNewJob` after it moves the deadline, so a pass planned
        // meanwhile (from a read of the store before this job) cannot pass over it.
        guard runAt < timerDeadline else { return }
        lookAtNewJobs()
    }

    private func lookAtNewJobs() {
        guard !newJobsPending.exchange(true, ordering: .sequentiallyConsistent) else { return }
        queue.async { self.considerNewJobs() }
    }

    private func considerNewJobs() {
        // Cleared before the minimum is taken, so a job stored meanwhile queues another look.
        newJobsPending.store(false, ordering: .sequentiallyConsistent)
        let earliest = earliestNewJob.exchange(.max, ordering: .sequentiallyConsistent)
        if earliest < timerDeadline { schedule() }
    }

    // MARK: - Questions the API asks

    /// What runs now and the free disk space, for explaining waits; take one per API request.
    func loadSnapshot() -> Load {
        var snapshot = publishedLoad.withLock { $0 }
        snapshot.freeDiskBytes = disk.freeBytes(now: clock.now(), maxAge: DiskSpace.readerMaxAge).map { $0 - snapshot.reservedDiskBytes }
        return snapshot
    }

    /// Transfers running now.
    var runningTransfers: Int { publishedLoad.withLock { $0.running } }

    /// The jobs whose transfers run now (their claims committed), for a node that checks them
    /// against the store (cancel or pause through another node, a lease lost).
    func startedJobIDs() -> [String] {
        queue.sync { active.filter { $0.value.transferID != nil }.map(\.key) }
    }

    /// Bytes on disk of a running job, fresher than its stored count.
    func liveBytes(of id: String) -> Int64? {
        live.withLock { $0[id]?.bytesReceived }
    }

    /// Every running transfer's progress now, by job id.
    func liveProgress() -> [String: LiveProgress] {
        live.withLock { $0 }
    }

    /// Why a queued job waits now, by the same rule the scheduler follows (its saved byte count
    /// stands in for the partial file's length).
    func waitingFor(_ job: Download, load: Load, now: Int64) -> WaitingFor? {
        guard job.state == .queued else { return nil }
        if job.awaitingURLSince != nil { return .url }
        switch policy.decide(job, now: now, load: load, partialBytes: job.bytesReceived) {
        case .wait(let reason): return reason
        case .start: return .slot  // startable: it waits for the next pass to give it a slot
        }
    }

    // MARK: - Stopping

    /// Stops a job's transfer if it runs; a cancelled job's partial data is removed either way.
    func stop(_ id: String, reason: StopReason) {
        queue.async {
            if var running = self.active[id], running.isAttempting, running.stopReason != .unclaimed {
                running.stopReason = reason
                self.active[id] = running
                self.cancelAttempt(of: running)
            } else if reason == .cancel {
                self.partials.remove(id)
            }
        }
    }

    /// A client changed a job (PATCH): a running one settles with the new fields, and with a new
    /// request (`restart`) stops its attempt, to go on from its partial data with the new one.
    func changed(_ job: Download, restart: Bool) {
        queue.async {
            guard var running = self.active[job.id] else { return }
            running.download.url = job.url
            running.download.headers = job.headers
            running.download.priority = job.priority
            running.download.earliestBeginDate = job.earliestBeginDate
            running.download.discretionary = job.discretionary
            running.download.webhookURL = job.webhookURL
            running.download.metadata = job.metadata
            running.download.mirrors = job.mirrors
            running.download.maxBytesPerSecond = job.maxBytesPerSecond
            self.active[job.id] = running
            if restart, running.stopReason == nil, running.isAttempting {
                self.active[job.id]?.stopReason = .requestChanged
                self.cancelAttempt(of: running)
            }
        }
    }

    /// Stops every transfer, keeping partial data; the jobs go back to `queued` for the next start.
    func shutdown(timeout: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.stopping = true
                self.timer.cancel()
                self.timerDeadline = .max
                guard !self.active.isEmpty else { return continuation.resume() }
                self.drained = continuation
                for (id, running) in self.active where running.stopReason != .unclaimed {
                    self.active[id]?.stopReason = .shutdown
                    self.cancelAttempt(of: running)
                }
                self.queue.asyncAfter(deadline: .now() + .milliseconds(Int(timeout.wholeMilliseconds))) { self.resumeDrained() }
            }
        }
    }

    private func resumeDrained() {
        drained?.resume()
        drained = nil
    }

    // MARK: - Claiming work

    /// One scheduling pass, in one transaction with the writes waiting for the queue's next turn.
    func schedule() {
        passPending.store(false, ordering: .releasing)
        commit(pendingWrites.take(), claiming: true)
    }

    /// A scheduling pass: the store promotes, reads candidates and claims in one transaction (that
    /// `claim` runs, alone or after a turn's writes), asking the policy about each candidate with
    /// the load as it grows during the pass. False when the store failed: nothing was claimed,
    /// and a pass is tried again later.
    private func runPass(_ claim: (ClaimPass) throws -> ClaimResult) -> Bool {
        let now = clock.now()
        let capacity = policy.capacity
        do {
            try forgetPastHolds(now: now)
        } catch {
            logger.error("scheduling failed", metadata: ["error": "\(error)"])
            arm(at: now + Self.storeRetryInterval, now: now)
            return false
        }
        let freeAtStart = disk.freeBytes(now: now)
        var waitsForDisk = false
        let heldHosts = Set(load.hostBackoffs.keys).union(load.hostSpacing.keys)
        var reserved: [(running: Active, partialBytes: Int64)] = []
        // What other nodes sharing the store run, by host, as the store reads it in the pass.
        var elsewhere: [String: Int] = [:]
        var pass = ClaimPass(
            now: now, agedBefore: now - capacity.discretionaryMaxDelay.wholeMilliseconds,
            agingDelay: capacity.discretionaryMaxDelay.wholeMilliseconds,
            candidates: { _ in
                let free = capacity.maxTransfers - self.load.running
                guard free > 0 else { return nil }
                let byHost = self.load.runningByHost.merging(elsewhere, uniquingKeysWith: +)
                let fullHosts = byHost.filter { $0.value >= capacity.maxTransfersPerHost }.map(\.key)
                return (limit: free * 2 + 8, excludingHosts: Array(heldHosts.union(fullHosts)))
            },
            choose: { candidate in
                guard self.load.running < capacity.maxTransfers, self.active[candidate.id] == nil else { return nil }
                let partialBytes = self.partials.size(candidate.id)
                var current = self.load
                current.runningByHost.merge(elsewhere, uniquingKeysWith: +)
                current.freeDiskBytes = freeAtStart.map { $0 - self.load.reservedDiskBytes }
                switch self.policy.decide(candidate, now: now, load: current, partialBytes: partialBytes) {
                case .start:
                    let running = self.reserve(candidate, now: now, partialBytes: partialBytes)
                    reserved.append((running, partialBytes))
                    // Started now, not once the claim is committed: its request is on its way while
                    // the pass writes and commits (2,000 small files: ~4 % sooner). A claim that
                    // does not commit stops it again (`abandon`); after a pass that failed, the
                    // claims are awaited first, so that a failing store costs no request per retry.
                    if running.download.awaitingURLSince == nil, !self.lastPassFailed {
                        self.start(running.download, resumeFrom: partialBytes)
                    }
                    return running.download
                case .wait(.diskSpace):
                    waitsForDisk = true
                    return nil
                case .wait:
                    return nil
                }
            })
        pass.otherNodesRunning = { elsewhere = $0 }
        do {
            let result = try claim(pass)
            let claimed = Set(result.claimed.map(\.id))
            lastPassFailed = false
            for (running, partialBytes) in reserved {
                // A job a client (or another node) changed meanwhile was not claimed.
                guard claimed.contains(running.download.id) else {
                    abandon(running.download.id)
                    continue
                }
                hub.publish(running.download.id, .state(running.download))
                if running.download.awaitingURLSince != nil {
                    expireURL(running, partialBytes: partialBytes, now: now)
                } else if active[running.download.id]?.isAttempting == false {  // not started with the pass
                    start(running.download, resumeFrom: partialBytes)
                }
            }
            let wakeUps = [
                result.nextQueueChange,
                policy.nextWindowOpening(after: now),
                waitsForDisk ? now + Self.diskRecheckInterval : nil,
                (Array(load.hostBackoffs.values) + Array(load.hostSpacing.values)).min(),
            ]
            arm(at: wakeUps.compactMap { $0 }.min(), now: now)
            return true
        } catch {
            for (running, _) in reserved { abandon(running.download.id) }
            lastPassFailed = true
            logger.error("scheduling failed", metadata: ["error": "\(error)"])
            arm(at: now + Self.storeRetryInterval, now: now)
            return false
        }
    }

    /// Every job of `host` waits until `until` (a 429 or 503 with Retry-After).
    private func holdHost(_ host: String, until: Int64) {
        load.hostBackoffs[host] = max(until, load.hostBackoffs[host] ?? 0)
        publish()
    }

    /// Drops holds and spacings that have passed; at the first pass, restores the holds a
    /// previous run left in the store.
    private func forgetPastHolds(now: Int64) throws {
        if !backoffsRestored {
            load.hostBackoffs.merge(try store.hostBackoffs(after: now), uniquingKeysWith: max)
            backoffsRestored = true
        }
        load.hostBackoffs = load.hostBackoffs.filter { $0.value > now }
        load.hostSpacing = load.hostSpacing.filter { $0.value > now }
        publish()
    }

    private func arm(at deadline: Int64?, now: Int64) {
        timer.arm(at: deadline, now: now)
        timerDeadline = deadline ?? .max
        if earliestNewJob.load(ordering: .sequentiallyConsistent) < timerDeadline { lookAtNewJobs() }
    }

    /// Counts a job the pass decided to start in the load, before its claim is committed, so the
    /// pass's later decisions see it.
    private func reserve(_ candidate: Download, now: Int64, partialBytes: Int64) -> Active {
        let job = candidate.startingAttempt(now: now)
        if policy.capacity.hostMinInterval > .zero {
            load.hostSpacing[job.hostKey] = now + policy.capacity.hostMinInterval.wholeMilliseconds
        }
        let remaining = max(0, (job.bytesExpected ?? 0) - partialBytes)
        var running = Active(download: job, transferID: nil, stopReason: nil, persistedAt: now, attemptStartedAt: now,
                             discretionary: policy.actsDiscretionary(job, now: now), remainingBytes: remaining)
        // Ranges under way keep their number; a new job takes what its host has left.
        running.connections = job.ranges.isEmpty
            ? connectionsFree(for: job) : max(1, min(connectionsFree(for: job), job.ranges.filter { $0.next < $0.end }.count))
        running.mayUseRanges = job.ranges.isEmpty && running.connections > 1
        track(running, starting: true)
        return running
    }

    private func release(_ running: Active) {
        active[running.download.id] = nil
        track(running, starting: false)
    }

    /// A job reserved in a pass whose claim did not commit: the job is not this node's. A transfer
    /// the pass started for it is stopped and ends without a settlement (`finished`); until then
    /// the job keeps its slot, so that no later pass starts a second transfer into its partial file
    /// (which a restart or the housekeeper removes if no job keeps it).
    private func abandon(_ id: String) {
        guard let running = active[id] else { return }
        guard running.isAttempting else { return release(running) }
        active[id]?.stopReason = .unclaimed
        cancelAttempt(of: running)
    }

    /// Adds or removes a running transfer from the load the policy sees.
    private func track(_ running: Active, starting: Bool) {
        let step = starting ? 1 : -1
        if starting { active[running.download.id] = running }
        load.running += step
        load.runningByHost[running.download.hostKey, default: 0] += step * running.connections
        if load.runningByHost[running.download.hostKey] == 0 { load.runningByHost[running.download.hostKey] = nil }
        if running.discretionary { load.runningDiscretionary += step }
        load.reservedDiskBytes += starting ? running.remainingBytes : -running.remainingBytes
        publish()
    }

    func publish() {
        let snapshot = load
        publishedLoad.withLock { $0 = snapshot }
    }

    func start(_ job: Download, resumeFrom: Int64) {
        let id = job.id
        let digestFile = active[id]?.digestFile
        // Every attempt begins with its digest file, one that resumes ranges too.
        if let checksumURL = job.checksumURL, digestFile == nil { return fetchDigestFile(checksumURL, for: id, resumeFrom: resumeFrom) }
        if !job.ranges.isEmpty { return startRanges(job) }
        var request = template.request(for: job, partialPath: partials.path(id), resumeFrom: resumeFrom, digestFile: digestFile, now: clock.now())
        if active[id]?.mayUseRanges == true { request.firstPartLength = Self.minimumRangedSize }
        logger.info("transfer started", metadata: ["download.id": "\(id)", "attempt": "\(job.attempts)", "resume.offset": "\(resumeFrom)"])
        let transferID = transfers.start(
            request,
            onProgress: { progress in self.queue.async { self.progressed(id, progress) } },
            onComplete: { result in self.queue.async { self.finished(id, result) } })
        active[id]?.transferID = transferID
    }

    /// An attempt of a job with a `checksumURL` begins with its digest file, fetched under the
    /// same egress policy as the download; the download starts once it is read.
    private func fetchDigestFile(_ url: String, for id: String, resumeFrom: Int64) {
        let transferID = transfers.start(
            template.digestFileRequest(url), onProgress: { _ in },
            onComplete: { result in self.queue.async { self.digestFileFetched(id, result, resumeFrom: resumeFrom) } })
        active[id]?.transferID = transferID
    }

    private func digestFileFetched(_ id: String, _ fetched: TransferResult, resumeFrom: Int64) {
        guard let running = active[id] else { return }
        // The attempt ends here unless the download starts: with the partial data as it was (a
        // segmented job's file has its full size from the start: its ranges say how far it got).
        let kept = running.download.ranges.isEmpty ? resumeFrom : running.download.ranges.bytesOnDisk
        var ended = TransferResult(failure: fetched.failure, bytesOnDisk: kept, effectiveURL: fetched.effectiveURL)
        guard running.stopReason == nil, fetched.failure == nil, let status = fetched.httpStatus else { return finished(id, ended, atDigestFile: true) }
        switch DigestFile.read(status: status, body: fetched.responseBody) {
        case .success(let digestFile):
            // A named file's line is looked for now, so that a digest file without one costs no download.
            let destination = running.download.destination
            if !destination.isDirectory, case .failure(let problem) = digestFile.checksum(for: destination.fileName) {
                return finished(id, ended, digestFileProblem: problem.message)
            }
            active[id]?.digestFile = digestFile
            start(running.download, resumeFrom: resumeFrom)
        case .failure(let problem) where DigestFile.isTransient(status: status):
            // Like an origin's 408, 429 or 5xx: worth another attempt.
            ended.failure = .network("the digest file \(problem.message)")
            finished(id, ended, atDigestFile: true)
        case .failure(let problem):
            finished(id, ended, digestFileProblem: problem.message)
        }
    }

    /// A job waiting for a new URL came due: its deadline passed without one, so it fails
    /// (`url_expired`), keeping its partial data for a retry, instead of starting.
    private func expireURL(_ running: Active, partialBytes: Int64, now: Int64) {
        release(running)
        let outcome = Settlement(context: settlement, job: running.download, result: TransferResult(bytesOnDisk: partialBytes),
                                 startedAt: now, now: now, jitter: 0)
        pendingWrites.add(outcome.urlExpired())
        attemptsEnded = true
    }

    private func progressed(_ id: String, _ progress: TransferProgress) {
        if progress.bodyComplete { return bodyReceived(id) }
        guard var running = active[id], running.stopReason == nil else { return }
        if let reason = switchOver(&running, progress) {
            running.stopReason = reason
            active[id] = running
            return cancelAttempt(of: running)
        }
        // The first time a validator is seen it is saved at once: a crash from here on must resume with it.
        let newValidator = progress.validator != running.download.validator ? progress.validator : nil
        if let newValidator { running.download.validator = newValidator }
        live.withLock {
            $0[id] = LiveProgress(session: running.download.session, bytesReceived: progress.bytesOnDisk,
                                  bytesExpected: progress.bytesExpected ?? running.download.bytesExpected)
        }
        hub.publish(id, .progress(bytesReceived: progress.bytesOnDisk, bytesExpected: progress.bytesExpected ?? running.download.bytesExpected))
        let now = clock.now()
        guard newValidator != nil || now - running.persistedAt >= Self.progressPersistInterval else {
            active[id] = running
            return
        }
        running.persistedAt = now
        active[id] = running
        pendingWrites.add(JobWrite(changes: [.progress(id: id, bytesReceived: progress.bytesOnDisk, bytesExpected: progress.bytesExpected, validator: newValidator)]))
    }

    /// An attempt's whole body is in: its slot goes to the next job now, and it settles (sync,
    /// hash, place, commit) behind, still `running` in the store until its write is committed.
    private func bodyReceived(_ id: String) {
        guard var running = active[id], running.stopReason == nil, !running.slotFreed, running.ranges == nil else { return }
        running.slotFreed = true
        active[id] = running
        track(running, starting: false)
        // The pass for the freed slot runs at the queue's next turn, with whatever writes are
        // waiting then, not with this attempt's own settlement: that one waits for the file's
        // fsync, and the slot stayed empty meanwhile (2,000 small files: 7 % longer, 5 % more CPU).
        passWanted = true
        pendingWrites.wake()
    }

    /// `atDigestFile`: the attempt ended fetching the digest file, before the job's URL was asked.
    func finished(_ id: String, _ result: TransferResult, digestFileProblem: String? = nil, atDigestFile: Bool = false) {
        guard var running = active[id] else { return }
        if running.stopReason == .unclaimed {
            // Its slot is free for the next pass, which other events bring (not asked for here: with
            // a store that cannot commit, that would be a pass, a request and a cancel in a loop).
            release(running)
            live.withLock { _ = $0.removeValue(forKey: id) }
            if stopping, active.isEmpty { resumeDrained() }
            return
        }
        if running.stopReason == nil, result.partReceived {
            return goOn(afterFirstPart: &running, result)
        }
        if running.stopReason == .sizeMismatch {
            running.download = startsOver(running.download)
            running.stopReason = .requestChanged
            active[id] = running
            return finished(id, TransferResult(failure: .cancelled))
        }
        active[id] = nil
        if !running.slotFreed { track(running, starting: false) }
        live.withLock { _ = $0.removeValue(forKey: id) }
        let outcome = Settlement(context: settlement, job: running.download, result: result, startedAt: running.attemptStartedAt,
                                 now: clock.now(), jitter: Double.random(in: 0..<1), digestFile: running.digestFile,
                                 reachedURL: !atDigestFile)
        let stopReason = running.stopReason
        if let reason = stopReason ?? (result.failure == .cancelled ? .shutdown : nil) {
            pendingWrites.add(outcome.stopped(reason))
        } else if let digestFileProblem {
            pendingWrites.add(outcome.digestFileUnavailable(digestFileProblem))
        } else {
            let write = outcome.settle()
            if let (host, until) = write.hostHold { holdHost(host, until: until) }
            pendingWrites.add(write)
        }
        // A completed body's slot was passed on already; anything else may put the job back in the queue.
        if !running.slotFreed || stopReason != nil || !result.isComplete || stopping { attemptsEnded = true }
    }

    // MARK: - Writing in batches

    /// One transaction for everything written since the last commit (and whatever an earlier
    /// commit could not save), after one fsync per directory files were placed in; with a
    /// scheduling pass in the same transaction when slots were freed or jobs may have come back
    /// to the queue (or `claiming` asks for one).
    private func commit(_ writes: [JobWrite], claiming: Bool = false) {
        let batch = unsavedWrites.take(adding: writes)
        if let problem = PlacedDirectory.sync(batch.compactMap(\.placedIn)) {
            // Like a write the store refused: the jobs stay `running`, their partial files stay
            // (a restart finds such a file placed), and the whole batch is tried again later.
            logger.error("finished files' names not durable; trying again", metadata: ["jobs": "\(batch.count)", "error": "\(problem)"])
            unsavedWrites.keep(batch)
            return
        }
        let claiming = (claiming || passWanted || attemptsEnded) && !stopping
        if claiming { (passWanted, attemptsEnded) = (false, false) }
        guard !batch.isEmpty || claiming else { return }
        let changes = batch.flatMap(\.changes)
        do {
            if !claiming {
                committed(batch, try store.apply(changes))
            } else if !runPass({ pass in
                guard !changes.isEmpty else { return try store.claim(pass) }
                let turn = try store.applyAndClaim(changes, pass)
                // Announced before the pass starts what it claimed: a job settled and claimed again
                // in this turn is seen back in the queue before it is seen running.
                committed(batch, turn.applied)
                return turn.claim
            }) {
                throw TurnFailed()
            }
        } catch {
            guard !batch.isEmpty else { return }
            // Nothing of the batch is saved; the jobs stay `running` in the database, so nothing
            // else claims them, and their settlement is tried again until the store takes it.
            logger.error("job states not saved; trying again", metadata: ["jobs": "\(batch.count)", "error": "\(error)"])
            unsavedWrites.keep(batch)
            return
        }
        if stopping, attemptsEnded {
            attemptsEnded = false
            if active.isEmpty { resumeDrained() }
        }
    }

    /// Runs what follows each write's commit, with its changes' results.
    private func committed(_ batch: [JobWrite], _ results: [Bool]) {
        var offset = 0
        for write in batch {
            write.committed(Array(results[offset..<offset + write.changes.count]))
            offset += write.changes.count
        }
    }

    /// A turn's transaction failed in its scheduling pass (which logged why).
    private struct TurnFailed: Error {}
}
