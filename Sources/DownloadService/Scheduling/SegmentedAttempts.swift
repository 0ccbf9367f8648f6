import Confinement
import Dispatch
import DownloadCore
import Logging
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
///
/// The attempt runner holds every attempt and hands a segmented one in (`inout`) for this part of
/// its work: what follows its first part, starting and resuming its ranges, saving their progress,
/// and what their end comes to as one transfer's result. Keeps no state of its own; it is Sendable
/// as every stored property is a constant, and runs only on `queue`, where the ledger and the
/// completer it uses are confined (assertOnQueue).
final class SegmentedAttempts: QueueConfined, Sendable {
    let queue: DispatchQueue
    private let ledger: LoadLedger
    private let completer: Completer
    private let transfers: any TransferRunning
    private let template: TransferTemplate
    private let partials: PartialFiles
    private let clock: Clock
    private let logger: Logger

    /// The least size worth splitting, and what a first connection asks for: below it one
    /// connection finishes about as soon.
    static let minimumRangedSize: Int64 = 1 << 20
    /// How often a segmented job's ranges are written: more often than one connection's progress,
    /// since after a crash every range fetches again what it got since.
    static let rangesPersistInterval: Int64 = 250

    /// What comes after a first part: the rest over the job's ranges, or over one connection from
    /// where the part ended.
    enum AfterFirstPart: Equatable { case ranges, oneConnection }

    init(queue: DispatchQueue, ledger: LoadLedger, completer: Completer, transfers: any TransferRunning,
         template: TransferTemplate, partials: PartialFiles, clock: Clock, logger: Logger) {
        self.queue = queue
        self.ledger = ledger
        self.completer = completer
        self.transfers = transfers
        self.template = template
        self.partials = partials
        self.clock = clock
        self.logger = logger
    }

    /// A first connection's progress: once it is clear that it stays alone (the origin sent more
    /// than the first part), it gives back the connections it will not use.
    func firstConnectionProgressed(_ attempt: inout ActiveAttempt, _ progress: TransferProgress) {
        assertOnQueue()
        guard attempt.mayUseRanges, progress.bytesExpected != nil || progress.validator != nil else { return }
        attempt.mayUseRanges = false
        if !progress.isFirstPart { ledger.setConnections(&attempt, 1) }
    }

    /// The first connection got the first part it asked for: the rest comes over the job's
    /// connections (`.ranges`, planned in the attempt's job) when it is large enough and has a
    /// strong validator for `If-Range`, or else over one connection from where the part ended (the
    /// one just used, which curl keeps open).
    func goOn(afterFirstPart attempt: inout ActiveAttempt, _ result: TransferResult) -> AfterFirstPart {
        assertOnQueue()
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
            logger.info("download goes on over several connections",
                        metadata: ["download.id": "\(attempt.download.id)", "connections": "\(attempt.connections)", "bytes": "\(written)"])
            return .ranges
        }
        ledger.setConnections(&attempt, 1)
        if let validator = result.validator { attempt.download.validator = validator }
        return .oneConnection
    }

    /// Starts (or resumes) the ranges of the attempt's job; their progress and end come to
    /// `onProgress` and `onComplete` as the engine reports them. False when the partial file no
    /// longer holds their progress (removed, say): the attempt's job is then without partial data,
    /// to start over on one connection, whose first part may hand over to several again.
    func start(_ attempt: inout ActiveAttempt, onProgress: @escaping @Sendable (SegmentedProgress) -> Void,
               onComplete: @escaping @Sendable (SegmentedResult) -> Void) -> Bool {
        assertOnQueue()
        let job = attempt.download
        let id = job.id
        let path = partials.path(id)
        let length = partials.size(id)
        guard let size = job.ranges.last?.end, size == job.bytesExpectedFromOrigin,
              job.ranges.allSatisfy({ $0.next == $0.start || $0.next <= length }), let validator = job.validator else {
            attempt.download = partials.startingOver(job)
            attempt.mayUseRanges = attempt.connections > 1
            return false
        }
        let connections = attempt.connections
        var request = template.request(for: job, partialPath: path, resumeFrom: 0, digestFile: attempt.digestFile, now: clock.now())
        request.maxSpeedBytesPerSecond = job.maxBytesPerSecond.map { max(1, $0 / Int64(connections)) }
        let done = job.ranges.bytesOnDisk
        attempt.bytesAtStart = done
        logger.info("ranges started", metadata: [
            "download.id": "\(id)", "ranges": "\(job.ranges.count)", "connections": "\(connections)", "bytes": "\(done)",
        ])
        var ranges = job.ranges.map { ByteRange(start: $0.start, end: $0.end, next: $0.next) }
        if job.destination.isDirectory, attempt.firstResponse == nil, ranges.allSatisfy(\.isDone), let last = ranges.indices.last {
            // Every byte is there but no response of this start would name the file (after a
            // restart, say): the last byte is fetched again for one.
            ranges[last].next = ranges[last].end - 1
        }
        attempt.ranges = transfers.startSegments(
            request, path: path, size: size, validator: validator, ranges: ranges, connections: connections,
            onProgress: onProgress, onComplete: onComplete)
        return true
    }

    /// The ranges' progress, kept in the attempt's job and saved every `rangesPersistInterval`.
    func progressed(_ attempt: inout ActiveAttempt, _ progress: SegmentedProgress) {
        assertOnQueue()
        attempt.download.ranges = progress.ranges.map { RangeProgress(start: $0.start, end: $0.end, next: $0.next) }
        guard clock.now() - attempt.persistedAt >= Self.rangesPersistInterval else { return }
        save(&attempt)
    }

    /// Saves the ranges as the attempt's job holds them; `then` runs once they are committed.
    func save(_ attempt: inout ActiveAttempt, then: @escaping ([Bool]) -> Void = { _ in }) {
        assertOnQueue()
        attempt.persistedAt = clock.now()
        let job = attempt.download
        completer.add(JobWrite(changes: [.ranges(id: job.id, ranges: job.ranges, bytesReceived: job.ranges.bytesOnDisk,
                                                 bytesExpected: job.bytesExpectedFromOrigin, validator: job.validator)],
                               committed: then))
    }

    /// The ranges ended: what they come to as one transfer's result, for the attempt to settle
    /// with, every range's progress kept in its job.
    func ended(_ attempt: inout ActiveAttempt, _ segmented: SegmentedResult) -> TransferResult {
        assertOnQueue()
        attempt.ranges = nil
        if let single = segmented.singleConnection {
            // The origin would not serve ranges of this file: it came over one connection from byte 0.
            attempt.download.ranges = []
            return single
        }
        attempt.download.ranges = segmented.ranges.map { RangeProgress(start: $0.start, end: $0.end, next: $0.next) }
        let result = segmented.attemptResult(of: attempt.download, bytesAtStart: attempt.bytesAtStart,
                                             firstResponse: attempt.firstResponse)
        if case .rangeMismatch? = result.failure {
            // A range came back as other bytes than asked for: nothing of the file can be trusted.
            attempt.download = partials.startingOver(attempt.download)
        }
        return result
    }
}

extension PartialFiles {
    /// The job without its partial data, which is removed: the next attempt starts from byte 0.
    func startingOver(_ job: Download) -> Download {
        remove(job.id)
        var fresh = job
        fresh.validator = nil
        fresh.bytesReceived = 0
        fresh.ranges = []
        return fresh
    }
}

extension [RangeProgress] {
    /// Bytes on disk of a segmented download's file: its ranges' progress.
    var bytesOnDisk: Int64 { reduce(0) { $0 + $1.next - $1.start } }
}
