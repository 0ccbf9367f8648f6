import DownloadCore
import Transfer

/// Segmented downloads: a job with `connections` > 1 first asks one connection for the first
/// `minimumRangedSize` bytes. A 206 for that part tells the size and a validator and proves that
/// the origin honours `Range`; the job then goes on over several connections, each byte range into
/// the one preallocated partial file, each range's `next` saved with the job's progress so that a
/// crash or fault resumes every range on its own. The first request ends where its part does, so
/// no connection is closed half-read while the ranges' open: at no moment does the job hold more
/// connections to the origin than it counts. An origin that ignores `Range` answers the first
/// request with the whole file, which then simply arrives over that one connection. Every
/// connection counts against its host's `maxTransfersPerHost`; the job counts once against `maxTransfers`.
extension Scheduler {
    /// The least size worth splitting, and what a first connection asks for: below it one
    /// connection finishes about as soon.
    static let minimumRangedSize: Int64 = 1 << 20
    /// How often a segmented job's ranges are written: more often than one connection's progress,
    /// since after a crash every range fetches again what it got since.
    static let rangesPersistInterval: Int64 = 250

    /// Connections a job may open now: what it asks for, within what its host has left (at least one).
    func connectionsFree(for job: Download) -> Int {
        let used = load.runningByHost[job.hostKey, default: 0]
        return max(1, min(job.connections, policy.capacity.maxTransfersPerHost - used))
    }

    /// Whether the running attempt has a transfer to stop.
    func cancelAttempt(of running: Active) {
        if let ranges = running.ranges {
            ranges.cancel()
        } else if let transferID = running.transferID {
            transfers.cancel(transferID)
        }
    }

    /// A first connection's progress: the reason to stop it (to drop data carried over from
    /// another URL of another size), or nil to let it run. Gives back the connections it will not
    /// use once it is clear it stays alone: the origin sent more than the first part.
    func switchOver(_ running: inout Active, _ progress: TransferProgress) -> StopReason? {
        let job = running.download
        if job.validator == "", let size = progress.bytesExpected, let known = job.bytesExpectedFromOrigin, size != known {
            logger.info("carried-over data does not fit this URL; starting from zero",
                        metadata: ["download.id": "\(job.id)", "size": "\(size)", "expected": "\(known)"])
            return .sizeMismatch
        }
        guard running.mayUseRanges, progress.bytesExpected != nil || progress.validator != nil else { return nil }
        running.mayUseRanges = false
        if !progress.isFirstPart { setConnections(&running, 1) }
        return nil
    }

    /// The first connection got the first part it asked for: the rest comes over the job's
    /// connections when it is large enough and has a strong validator for `If-Range`, or else over
    /// one connection from where the part ended (the one just used, which curl keeps open).
    func goOn(afterFirstPart running: inout Active, _ result: TransferResult) {
        let written = result.bytesOnDisk
        running.transferID = nil
        running.mayUseRanges = false
        if let size = result.bytesExpected, size - written >= Self.minimumRangedSize, running.connections > 1,
           let validator = result.validator, !validator.hasPrefix("W/") {
            running.download.bytesExpectedFromOrigin = size
            running.download.validator = validator
            running.firstResponse = (result.contentDisposition, result.effectiveURL)
            running.download.ranges = [RangeProgress(start: 0, end: written, next: written)].filter { $0.end > 0 }
                + ByteRange.pieces(from: written, size: size, connections: running.connections).map {
                    RangeProgress(start: $0.start, end: $0.end, next: $0.start)
                }
            active[running.download.id] = running
            logger.info("download goes on over several connections",
                        metadata: ["download.id": "\(running.download.id)", "connections": "\(running.connections)", "bytes": "\(written)"])
            return startRanges(running.download)
        }
        setConnections(&running, 1)
        if let validator = result.validator { running.download.validator = validator }
        active[running.download.id] = running
        start(running.download, resumeFrom: written)
    }

    /// Starts (or resumes) the job's ranges; a job whose partial file no longer holds their
    /// progress (removed, say) starts over on one connection.
    func startRanges(_ job: Download) {
        let id = job.id
        let path = partials.path(id)
        let length = partials.size(id)
        guard let size = job.ranges.last?.end, size == job.bytesExpectedFromOrigin,
              job.ranges.allSatisfy({ $0.next == $0.start || $0.next <= length }), let validator = job.validator else {
            let fresh = startsOver(job)
            if var running = active[id] {
                running.download = fresh
                // Its first connection may hand over to several again, as a new job's does.
                running.mayUseRanges = running.connections > 1
                active[id] = running
            }
            return start(fresh, resumeFrom: 0)
        }
        let connections = active[id]?.connections ?? 1
        var request = template.request(for: job, partialPath: path, resumeFrom: 0, digestFile: active[id]?.digestFile, now: clock.now())
        request.maxSpeedBytesPerSecond = job.maxBytesPerSecond.map { max(1, $0 / Int64(connections)) }
        let done = job.ranges.bytesOnDisk
        active[id]?.bytesAtStart = done
        logger.info("ranges started", metadata: [
            "download.id": "\(id)", "ranges": "\(job.ranges.count)", "connections": "\(connections)", "bytes": "\(done)",
        ])
        var ranges = job.ranges.map { ByteRange(start: $0.start, end: $0.end, next: $0.next) }
        if job.destination.isDirectory, active[id]?.firstResponse == nil, ranges.allSatisfy(\.isDone), let last = ranges.indices.last {
            // Every byte is there but no response of this start would name the file (after a
            // restart, say): the last byte is fetched again for one.
            ranges[last].next = ranges[last].end - 1
        }
        let handle = transfers.startSegments(
            request, path: path, size: size, validator: validator, ranges: ranges, connections: connections,
            onProgress: { progress in self.queue.async { self.rangesProgressed(id, progress) } },
            onComplete: { result in self.queue.async { self.rangesFinished(id, result) } })
        active[id]?.ranges = handle
    }

    /// The job without its partial data: the next attempt starts from byte 0.
    func startsOver(_ job: Download) -> Download {
        partials.remove(job.id)
        var fresh = job
        fresh.validator = nil
        fresh.bytesReceived = 0
        fresh.ranges = []
        return fresh
    }

    private func rangesProgressed(_ id: String, _ progress: SegmentedProgress) {
        guard var running = active[id], running.stopReason == nil else { return }
        let bytes = progress.bytesOnDisk
        running.download.ranges = progress.ranges.map { RangeProgress(start: $0.start, end: $0.end, next: $0.next) }
        let expected = running.download.bytesExpectedFromOrigin
        live.withLock { $0[id] = LiveProgress(session: running.download.session, bytesReceived: bytes, bytesExpected: expected) }
        hub.publish(id, .progress(bytesReceived: bytes, bytesExpected: expected))
        let now = clock.now()
        if now - running.persistedAt >= Self.rangesPersistInterval {
            running.persistedAt = now
            pendingWrites.add(JobWrite(changes: [.ranges(id: id, ranges: running.download.ranges, bytesReceived: bytes,
                                                         bytesExpected: expected, validator: running.download.validator)]))
        }
        active[id] = running
    }

    /// The ranges ended: the job settles as one attempt, with every range's progress kept.
    private func rangesFinished(_ id: String, _ segmented: SegmentedResult) {
        guard var running = active[id] else { return }
        running.ranges = nil
        if let single = segmented.singleConnection {
            // The origin would not serve ranges of this file: it came over one connection from byte 0.
            running.download.ranges = []
            active[id] = running
            return finished(id, single)
        }
        running.download.ranges = segmented.ranges.map { RangeProgress(start: $0.start, end: $0.end, next: $0.next) }
        let bytes = segmented.ranges.reduce(0) { $0 + $1.bytesOnDisk }
        var result = TransferResult(bytesOnDisk: bytes, bytesThisAttempt: max(0, bytes - running.bytesAtStart),
                                    bytesExpected: running.download.bytesExpectedFromOrigin, validator: running.download.validator)
        if segmented.isComplete {
            result.httpStatus = 206
            result.sha256 = segmented.sha256
            result.extraDigest = segmented.extraDigest
            // Named as the first connection's response said, or else (resumed after a restart or
            // a pause) as this start's range responses do.
            let named = running.firstResponse ?? (segmented.contentDisposition, segmented.effectiveURL)
            result.contentDisposition = named.contentDisposition
            result.effectiveURL = named.effectiveURL
        } else if let failure = segmented.failure {
            result.failure = failure
        } else if let (_, first) = segmented.unfinished.min(by: { $0.key < $1.key }) {
            result.failure = first.failure
            result.httpStatus = first.httpStatus
            result.retryAfter = first.retryAfter
            if case .rangeMismatch? = first.failure {
                // A range came back as other bytes than asked for: nothing of the file can be trusted.
                running.download = startsOver(running.download)
                result.bytesOnDisk = 0
                result.validator = nil
            }
        } else {
            result.failure = .cancelled
        }
        active[id] = running
        finished(id, result)
    }

    /// Holds `count` of the host's connections instead of those held now.
    func setConnections(_ running: inout Active, _ count: Int) {
        load.runningByHost[running.download.hostKey, default: 0] += count - running.connections
        running.connections = count
        publish()
    }
}

extension Scheduler.Active {
    /// Whether an attempt runs that a stop must cancel.
    var isAttempting: Bool { transferID != nil || ranges != nil }
}

extension [RangeProgress] {
    /// Bytes on disk of a segmented download's file: its ranges' progress.
    var bytesOnDisk: Int64 { reduce(0) { $0 + $1.next - $1.start } }
}

extension TransferResult {
    /// The file is complete and hashed.
    var isComplete: Bool { failure == nil && sha256 != nil }
}
