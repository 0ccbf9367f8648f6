import DownloadCore
import Transfer

/// Segmented downloads: a job with `connections` > 1 first asks one connection for the first
/// `minimumRangedSize` bytes. A 206 for that part tells the size and a validator and proves that
/// the origin honours `Range`; the job then goes on over several connections, each byte range into
/// the one preallocated partial file, each range's `next` saved with the job's progress so that a
/// crash or fault resumes every range on its own. The first request ends where its part does, so
/// no connection is closed half-read while the ranges open: at no moment does the job hold more
/// connections to the origin than it counts. An origin that ignores `Range` answers the first
/// request with the whole file, which then simply arrives over that one connection. Every
/// connection counts against its host's `maxTransfersPerHost`; the job counts once against `maxTransfers`.
extension AttemptRunner {
    /// The least size worth splitting, and what a first connection asks for: below it one
    /// connection finishes about as soon.
    static let minimumRangedSize: Int64 = 1 << 20
    /// How often a segmented job's ranges are written: more often than one connection's progress,
    /// since after a crash every range fetches again what it got since.
    static let rangesPersistInterval: Int64 = 250

    /// A first connection's progress: the reason to stop it (to drop data carried over from
    /// another URL of another size), or nil to let it run. Gives back the connections it will not
    /// use once it is clear it stays alone: the origin sent more than the first part.
    func switchOver(_ attempt: inout ActiveAttempt, _ progress: TransferProgress) -> StopReason? {
        let job = attempt.download
        if job.validator == "", let size = progress.bytesExpected, let known = job.bytesExpectedFromOrigin, size != known {
            logger.info("carried-over data does not fit this URL; starting from zero",
                        metadata: ["download.id": "\(job.id)", "size": "\(size)", "expected": "\(known)"])
            return .sizeMismatch
        }
        guard attempt.mayUseRanges, progress.bytesExpected != nil || progress.validator != nil else { return nil }
        attempt.mayUseRanges = false
        if !progress.isFirstPart { ledger.setConnections(&attempt, 1) }
        return nil
    }

    /// The first connection got the first part it asked for: the rest comes over the job's
    /// connections when it is large enough and has a strong validator for `If-Range`, or else over
    /// one connection from where the part ended (the one just used, which curl keeps open).
    func goOn(afterFirstPart attempt: inout ActiveAttempt, _ result: TransferResult) {
        let written = result.bytesOnDisk
        attempt.transferID = nil
        attempt.mayUseRanges = false
        if let size = result.bytesExpected, size - written >= Self.minimumRangedSize, attempt.connections > 1,
           let validator = result.validator, !validator.hasPrefix("W/") {
            attempt.download.bytesExpectedFromOrigin = size
            attempt.download.validator = validator
            attempt.firstResponse = (result.contentDisposition, result.effectiveURL)
            attempt.download.ranges = [RangeProgress(start: 0, end: written, next: written)].filter { $0.end > 0 }
                + ByteRange.pieces(from: written, size: size, connections: attempt.connections).map {
                    RangeProgress(start: $0.start, end: $0.end, next: $0.start)
                }
            active[attempt.download.id] = attempt
            logger.info("download goes on over several connections",
                        metadata: ["download.id": "\(attempt.download.id)", "connections": "\(attempt.connections)", "bytes": "\(written)"])
            return startRanges(attempt.download)
        }
        ledger.setConnections(&attempt, 1)
        if let validator = result.validator { attempt.download.validator = validator }
        active[attempt.download.id] = attempt
        start(attempt.download, resumeFrom: written)
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
            if var attempt = active[id] {
                attempt.download = fresh
                // Its first connection may hand over to several again, as a new job's does.
                attempt.mayUseRanges = attempt.connections > 1
                active[id] = attempt
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
        guard var attempt = active[id], attempt.stopReason == nil else { return }
        let bytes = progress.bytesOnDisk
        attempt.download.ranges = progress.ranges.map { RangeProgress(start: $0.start, end: $0.end, next: $0.next) }
        let expected = attempt.download.bytesExpectedFromOrigin
        report(id, session: attempt.download.session, bytes: bytes, expected: expected)
        let now = clock.now()
        if now - attempt.persistedAt >= Self.rangesPersistInterval {
            attempt.persistedAt = now
            completer.add(JobWrite(changes: [.ranges(id: id, ranges: attempt.download.ranges, bytesReceived: bytes,
                                                     bytesExpected: expected, validator: attempt.download.validator)]))
        }
        active[id] = attempt
    }

    /// The ranges ended: the job settles as one attempt, with every range's progress kept.
    private func rangesFinished(_ id: String, _ segmented: SegmentedResult) {
        guard var attempt = active[id] else { return }
        attempt.ranges = nil
        if let single = segmented.singleConnection {
            // The origin would not serve ranges of this file: it came over one connection from byte 0.
            attempt.download.ranges = []
            active[id] = attempt
            return finished(id, single)
        }
        attempt.download.ranges = segmented.ranges.map { RangeProgress(start: $0.start, end: $0.end, next: $0.next) }
        let result = segmented.attemptResult(of: attempt.download, bytesAtStart: attempt.bytesAtStart,
                                             firstResponse: attempt.firstResponse)
        if case .rangeMismatch? = result.failure {
            // A range came back as other bytes than asked for: nothing of the file can be trusted.
            attempt.download = startsOver(attempt.download)
        }
        active[id] = attempt
        finished(id, result)
    }
}

extension [RangeProgress] {
    /// Bytes on disk of a segmented download's file: its ranges' progress.
    var bytesOnDisk: Int64 { reduce(0) { $0 + $1.next - $1.start } }
}

extension TransferResult {
    /// The file is complete and hashed.
    var isComplete: Bool { failure == nil && sha256 != nil }
}
