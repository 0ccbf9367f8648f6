import Confinement
import Dispatch
import DownloadCore
import Logging
import Persistence
import Synchronization
import Transfer

/// Runs the attempts the dispatcher chose: starts each transfer (after its digest file, over one
/// connection or, through `segmented`, several), follows its progress, stops it when a client
/// asks, and hands how it ended to the completer as a settlement. Counts each attempt out of the
/// load when it ends, or as soon as its body is in (its slot goes to the next job while it settles).
final class AttemptRunner: QueueConfined, @unchecked Sendable {  // `active`, `stopping`, `drained` only on `queue` (assertOnQueue)
    let queue: DispatchQueue
    let ledger: LoadLedger
    let completer: Completer
    let transfers: any TransferRunning
    let template: TransferTemplate
    let settlement: SettlementContext
    let partials: PartialFiles
    /// Runs the attempts that go on over several connections.
    let segmented: SegmentedAttempts
    /// Runs the attempts of jobs whose destination is an object; nil without object storage.
    let objects: ObjectAttempts?
    /// Runs upload jobs' attempts; nil where the service takes no uploads.
    let uploads: UploadAttempts?
    /// Frees the server side of ended jobs' uploads (multipart uploads, tus resources).
    let sweeper: UploadSweeper?
    let hub: EventHub
    let clock: Clock
    let logger: Logger
    /// Progress of running transfers, for API reads between persisted updates and `GET /events`.
    let live = Mutex<[String: LiveProgress]>([:])

    var active: [String: ActiveAttempt] = [:]
    private var stopping = false
    private var drained: CheckedContinuation<Void, Never>?

    /// How often running jobs' progress is written to the database.
    static let progressPersistInterval: Int64 = 1000

    init(queue: DispatchQueue, ledger: LoadLedger, completer: Completer, transfers: any TransferRunning,
         template: TransferTemplate, settlement: SettlementContext, objects: ObjectAttempts? = nil, uploads: UploadAttempts? = nil,
         sweeper: UploadSweeper? = nil,
         hub: EventHub, clock: Clock, logger: Logger) {
        self.queue = queue
        self.ledger = ledger
        self.completer = completer
        self.transfers = transfers
        self.template = template
        self.settlement = settlement
        self.partials = settlement.partials
        self.segmented = SegmentedAttempts(queue: queue, ledger: ledger, completer: completer, transfers: transfers,
                                           template: template, partials: settlement.partials, clock: clock, logger: logger)
        self.objects = objects
        self.uploads = uploads
        self.sweeper = sweeper
        self.hub = hub
        self.clock = clock
        self.logger = logger
    }

    // MARK: - What the dispatcher asks

    /// Whether the job has an attempt here (running, or settling behind a freed slot).
    func isActive(_ id: String) -> Bool {
        assertOnQueue()
        return active[id] != nil
    }

    /// Whether the job holds a slot whose transfer has not started yet.
    func awaitsStart(_ id: String) -> Bool {
        assertOnQueue()
        return active[id]?.isAttempting == false
    }

    /// Takes a slot for `job` (its attempt already begun: `Download.startingAttempt`), before its
    /// claim is committed, so that the pass's later decisions count it.
    func reserve(_ job: Download, now: Int64, partialBytes: Int64, discretionary: Bool) -> ActiveAttempt {
        assertOnQueue()
        let remaining = max(0, (job.bytesExpected ?? 0) - partialBytes)
        var attempt = ActiveAttempt(download: job, transferID: nil, stopReason: nil, persistedAt: now, attemptStartedAt: now,
                                    discretionary: discretionary, remainingBytes: remaining)
        // Ranges under way keep their number; a new job takes what its host has left.
        let free = ledger.connectionsFree(for: job)
        attempt.connections = job.ranges.isEmpty ? free : max(1, min(free, job.ranges.filter { $0.next < $0.end }.count))
        attempt.mayUseRanges = job.ranges.isEmpty && attempt.connections > 1
        active[job.id] = attempt
        ledger.track(attempt, starting: true)
        return attempt
    }

    /// A job reserved in a pass whose claim did not commit: the job is not this node's. A transfer
    /// the pass started for it is stopped and ends without a settlement (`finished`); until then
    /// the job keeps its slot, so that no later pass starts a second transfer into its partial file
    /// (which a restart or the housekeeper removes if no job keeps it).
    func abandon(_ id: String) {
        assertOnQueue()
        guard let attempt = active[id] else { return }
        guard attempt.isAttempting else { return release(attempt) }
        active[id]?.stopReason = .unclaimed
        cancelAttempt(of: attempt)
    }

    /// A job waiting for a new URL came due: its deadline passed without one, so it fails
    /// (`url_expired`), keeping its partial data for a retry, instead of starting.
    func expireURL(_ attempt: ActiveAttempt, partialBytes: Int64, now: Int64) {
        assertOnQueue()
        release(attempt)
        let outcome = Settlement(context: settlement, job: attempt.download, result: TransferResult(bytesOnDisk: partialBytes),
                                 startedAt: now, now: now, jitter: 0)
        completer.add(outcome.urlExpired())
        completer.attemptEnded()
    }

    func release(_ attempt: ActiveAttempt) {
        active[attempt.download.id] = nil
        ledger.track(attempt, starting: false)
    }

    // MARK: - What clients and the service ask

    /// The jobs whose transfers run now, for a node that checks them against the store.
    func startedJobIDs() -> [String] {
        assertOnQueue()
        return active.filter { $0.value.isAttempting }.map(\.key)
    }

    /// Stops a job's transfer if it runs; a cancelled job's partial data is removed either way.
    func stop(_ id: String, reason: StopReason) {
        assertOnQueue()
        if var attempt = active[id], attempt.isAttempting, attempt.stopReason != .unclaimed {
            attempt.stopReason = reason
            active[id] = attempt
            cancelAttempt(of: attempt)
        } else if reason == .cancel {
            partials.removeUnlessPlaced(id)
            sweeper?.sweep()
        }
    }

    /// A client changed a job (PATCH): a running one settles with the new fields, and with a new
    /// request (`restart`) stops its attempt, to go on from its partial data with the new one.
    func changed(_ job: Download, restart: Bool) {
        assertOnQueue()
        guard var attempt = active[job.id] else { return }
        attempt.download = attempt.download.takingClientFields(from: job)
        active[job.id] = attempt
        if restart, attempt.stopReason == nil, attempt.isAttempting {
            active[job.id]?.stopReason = .requestChanged
            cancelAttempt(of: attempt)
        }
    }

    /// Stops every transfer, keeping partial data; `drained` resumes once every attempt's end is
    /// saved or `timeout` has passed.
    func shutdown(timeout: Duration, drained: CheckedContinuation<Void, Never>) {
        assertOnQueue()
        stopping = true
        guard !active.isEmpty else { return drained.resume() }
        self.drained = drained
        for (id, attempt) in active where attempt.stopReason != .unclaimed {
            active[id]?.stopReason = .shutdown
            cancelAttempt(of: attempt)
        }
        queue.asyncAfter(deadline: .now() + .milliseconds(Int(timeout.wholeMilliseconds))) { self.resumeDrained() }
    }

    /// Shutdown's wait ends once no attempt is left.
    func endShutdownIfDrained() {
        assertOnQueue()
        if stopping, active.isEmpty { resumeDrained() }
    }

    private func resumeDrained() {
        drained?.resume()
        drained = nil
    }

    // MARK: - Running an attempt

    /// Starts the job's transfer: its digest file first, then its ranges or one connection.
    func start(_ job: Download, resumeFrom: Int64) {
        assertOnQueue()
        let id = job.id
        let digestFile = active[id]?.digestFile
        // Every attempt begins with its digest file, one that resumes ranges too.
        if let plan = job.upload { return startUpload(id, plan: plan, to: job.currentURL) }
        if let checksumURL = job.checksumURL, digestFile == nil { return fetchDigestFile(checksumURL, for: id, resumeFrom: resumeFrom) }
        if !job.ranges.isEmpty { return startRanges(id) }
        var request = template.request(for: job, partialPath: partials.path(id), resumeFrom: resumeFrom, digestFile: digestFile, now: clock.now())
        if job.destination.isObject, let objects {
            let connections = active[id]?.connections ?? 1
            // The attempt may change the job as it starts, and end at once (every part of its
            // object stored): its end is taken at the queue's next turn, once it is kept here.
            let object = objects.start(
                job, connections: connections, request: request, uploadChanged: { self.active[id]?.download.objectUpload = $0 },
                onProgress: { self.progressed(id, $0) }, onComplete: { result in self.queue.async { self.finished(id, result) } })
            active[id]?.object = object
            return
        }
        if active[id]?.mayUseRanges == true { request.firstPartLength = SegmentedAttempts.minimumRangedSize }
        logger.info("transfer started", metadata: ["download.id": "\(id)", "attempt": "\(job.attempts)", "resume.offset": "\(resumeFrom)"])
        let transferID = transfers.start(
            request,
            onProgress: { progress in self.queue.async { self.progressed(id, progress) } },
            onComplete: { result in self.queue.async { self.finished(id, result) } })
        active[id]?.transferID = transferID
    }

    /// The planned ranges are committed before they start: starting makes the partial file full
    /// size, and after a crash a full-size file without its ranges would pass for a complete one.
    private func saveRangesThenStart(_ id: String, firstPart: TransferResult) {
        guard var attempt = active[id] else { return }
        segmented.save(&attempt) { _ in
            // Stopped meanwhile (nothing was running to cancel): it ends with its first part.
            if self.active[id]?.stopReason != nil {
                return self.finished(id, TransferResult(failure: .cancelled, bytesOnDisk: firstPart.bytesOnDisk))
            }
            self.startRanges(id)
        }
        active[id] = attempt
    }

    /// Starts (or resumes) the job's ranges; a job whose partial file no longer holds their
    /// progress starts over on one connection.
    private func startRanges(_ id: String) {
        guard var attempt = active[id] else { return }
        let started = segmented.start(
            &attempt,
            onProgress: { progress in self.queue.async { self.rangesProgressed(id, progress) } },
            onComplete: { result in self.queue.async { self.rangesFinished(id, result) } })
        active[id] = attempt
        if !started { start(attempt.download, resumeFrom: 0) }
    }

    private func rangesProgressed(_ id: String, _ progress: SegmentedProgress) {
        guard var attempt = active[id], attempt.stopReason == nil else { return }
        segmented.progressed(&attempt, progress)
        active[id] = attempt
        report(id, session: attempt.download.session, bytes: progress.bytesOnDisk, expected: attempt.download.bytesExpectedFromOrigin)
    }

    /// The ranges ended: the job settles as one attempt, with every range's progress kept.
    private func rangesFinished(_ id: String, _ result: SegmentedResult) {
        guard var attempt = active[id] else { return }
        let ended = segmented.ended(&attempt, result)
        active[id] = attempt
        finished(id, ended)
    }

    /// Stops the attempt's transfer (or ranges), which then ends as cancelled.
    func cancelAttempt(of attempt: ActiveAttempt) {
        if let object = attempt.object {
            object.cancel()
        } else if let sending = attempt.sending {
            sending.cancel()
        } else if let ranges = attempt.ranges {
            ranges.cancel()
        } else if let transferID = attempt.transferID {
            transfers.cancel(transferID)
        }
    }

    private func progressed(_ id: String, _ progress: TransferProgress) {
        if progress.bodyComplete { return bodyReceived(id) }
        guard var attempt = active[id], attempt.stopReason == nil else { return }
        // Data carried over from another URL (`validator` "") whose size this one does not have is
        // dropped: the job starts from zero.
        let job = attempt.download
        if job.validator == "", let size = progress.bytesExpected, let known = job.bytesExpectedFromOrigin, size != known {
            logger.info("carried-over data does not fit this URL; starting from zero",
                        metadata: ["download.id": "\(id)", "size": "\(size)", "expected": "\(known)"])
            attempt.stopReason = .sizeMismatch
            active[id] = attempt
            return cancelAttempt(of: attempt)
        }
        segmented.firstConnectionProgressed(&attempt, progress)
        // The first time a validator is seen it is saved at once: a crash from here on must resume with it.
        let newValidator = progress.validator != attempt.download.validator ? progress.validator : nil
        if let newValidator { attempt.download.validator = newValidator }
        let expected = progress.bytesExpected ?? attempt.download.bytesExpected
        report(id, session: attempt.download.session, bytes: progress.bytesOnDisk, expected: expected)
        let now = clock.now()
        guard newValidator != nil || now - attempt.persistedAt >= Self.progressPersistInterval else {
            active[id] = attempt
            return
        }
        attempt.persistedAt = now
        active[id] = attempt
        completer.add(JobWrite(changes: [.progress(id: id, bytesReceived: progress.bytesOnDisk, bytesExpected: progress.bytesExpected,
                                                   validator: newValidator)]))
    }

    /// Publishes a running job's progress to the API's readers and event streams.
    func report(_ id: String, session: String, bytes: Int64, expected: Int64?, direction: Direction = .download) {
        let progress = LiveProgress(session: session, bytesReceived: bytes, bytesExpected: expected, direction: direction)
        live.withLock { $0[id] = progress }
        hub.publish(id, .progress(progress))
    }

    /// An attempt's whole body is in: its slot goes to the next job now, and it settles (sync,
    /// hash, place, commit) behind, still `running` in the store until its write is committed.
    private func bodyReceived(_ id: String) {
        guard var attempt = active[id], attempt.stopReason == nil, !attempt.slotFreed, attempt.ranges == nil else { return }
        attempt.slotFreed = true
        active[id] = attempt
        ledger.track(attempt, starting: false)
        // Waiting for this attempt's own settlement would leave the slot empty during the file's
        // fsync (2,000 small files: 7 % longer, 5 % more CPU).
        completer.wantPass()
    }

    /// How an attempt ended; `atDigestFile`: while fetching the digest file, before the job's URL was asked.
    func finished(_ id: String, _ result: TransferResult, digestFileProblem: String? = nil, atDigestFile: Bool = false) {
        assertOnQueue()
        guard var attempt = active[id] else { return }
        if attempt.stopReason == .unclaimed {
            // Its slot is free for the next pass, which other events bring (not asked for here: with
            // a store that cannot commit, that would be a pass, a request and a cancel in a loop).
            release(attempt)
            live.withLock { _ = $0.removeValue(forKey: id) }
            return endShutdownIfDrained()
        }
        if attempt.stopReason == nil, result.partReceived {
            let next = segmented.goOn(afterFirstPart: &attempt, result)
            active[id] = attempt
            return next == .ranges ? saveRangesThenStart(id, firstPart: result) : start(attempt.download, resumeFrom: result.bytesOnDisk)
        }
        if attempt.stopReason == nil, let plan = attempt.download.upload, plan.uploadProtocol == .plain,
           let next = uploads?.redirect(after: result, from: attempt.redirectedTo ?? attempt.download.currentURL, followed: attempt.redirects) {
            active[id]?.redirects += 1
            active[id]?.redirectedTo = next
            return startUpload(id, plan: plan, to: next)
        }
        if attempt.stopReason == .sizeMismatch {
            attempt.download = partials.startingOver(attempt.download)
            attempt.stopReason = .requestChanged
            active[id] = attempt
            return finished(id, TransferResult(failure: .cancelled))
        }
        active[id] = nil
        if !attempt.slotFreed { ledger.track(attempt, starting: false) }
        let outcome = Settlement(context: settlement, job: attempt.download, result: result, startedAt: attempt.attemptStartedAt,
                                 now: clock.now(), jitter: Double.random(in: 0..<1), digestFile: attempt.digestFile,
                                 reachedURL: !atDigestFile)
        let stopReason = attempt.stopReason
        var write: JobWrite
        if let reason = stopReason ?? (result.failure == .cancelled ? .shutdown : nil) {
            write = outcome.stopped(reason)
        } else if let digestFileProblem {
            write = outcome.digestFileUnavailable(digestFileProblem)
        } else if let uploads, let plan = attempt.download.upload {
            write = outcome.settleUpload(sourceUnchanged: uploads.sourceIsUnchanged(attempt, plan: plan))
        } else if let objects, let object = attempt.object, result.isComplete {
            return objects.settle(outcome, upload: object.upload) { write in
                self.completer.add(self.forgettingLiveProgress(of: id, after: self.sweeper?.sweepingAfter(write) ?? write))
                self.completer.attemptEnded()
            }
        } else {
            write = outcome.settle()
            if let (host, until) = write.hostHold { ledger.holdHost(host, until: until) }
        }
        if let sweeper, attempt.object != nil || attempt.sending != nil { write = sweeper.sweepingAfter(write) }
        completer.add(forgettingLiveProgress(of: id, after: write))
        // A completed body's slot was passed on already; anything else may put the job back in the queue.
        if !attempt.slotFreed || stopReason != nil || !result.isComplete || stopping { completer.attemptEnded() }
    }
}

extension AttemptRunner {
    /// `write`, after whose commit the job's live progress is forgotten: until then a read shows
    /// the bytes the attempt reported rather than the older ones stored, so a client reading a
    /// job that stops (a pause) never sees its bytes go back. Forgotten before the write's own
    /// follow-ups run, which announce the new state: no progress is reported after it.
    private func forgettingLiveProgress(of id: String, after write: JobWrite) -> JobWrite {
        var forgetting = write
        let committed = write.committed
        forgetting.committed = { results in
            self.live.withLock { _ = $0.removeValue(forKey: id) }
            committed(results)
        }
        return forgetting
    }
}

extension TransferResult {
    /// The file is complete and hashed.
    var isComplete: Bool { failure == nil && sha256 != nil }
}
