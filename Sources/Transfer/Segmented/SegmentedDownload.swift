import Dispatch
import DownloadCore
import Synchronization

/// Reported while a segmented download runs (at most about four times a second per range).
public struct SegmentedProgress: Sendable, Equatable {
    /// Every range, with `next` as far as it is on disk: what the service persists, so that a
    /// crash resumes every range from there.
    public var ranges: [ByteRange]

    public var bytesOnDisk: Int64 { ranges.reduce(0) { $0 + $1.bytesOnDisk } }
}

/// How a segmented download ended.
public struct SegmentedResult: Sendable {
    /// Every range and how far it got: persist each one's `next`.
    public var ranges: [ByteRange]
    /// The last attempt of each range that did not finish, by its index in `ranges`: its failure,
    /// or the HTTP status (a 503 with `retryAfter`, say) it got instead of its bytes. Starting the
    /// download again with `ranges` retries these alone.
    public var unfinished: [Int: TransferResult]
    /// Once every range is done: the digests of the whole file, read back in order.
    public var sha256: String?
    public var extraDigest: String?
    /// The origin answered a range with a whole response (200): it does not honour Range, or the
    /// file changed (If-Range no longer matched). The file was then fetched again over one
    /// connection from the first byte, and this is that transfer's result (with its own digest,
    /// validator and size); `ranges` are then stale and should be dropped.
    public var singleConnection: TransferResult?
    /// Preparing (preallocating) or hashing the file failed.
    public var failure: TransferFailure?
    /// The `Content-Disposition` and final URL of the first range response that delivered its
    /// bytes in this start, if any: what names a file fetched into a directory.
    public var contentDisposition: String?
    public var effectiveURL: String?

    /// Whether the file is complete and hashed, over several connections or, after a fallback, one.
    public var isComplete: Bool {
        if let singleConnection { return singleConnection.failure == nil && singleConnection.sha256 != nil }
        return failure == nil && sha256 != nil
    }
}

/// A download over several connections at once: each `ByteRange` of the representation is fetched
/// with its own request (`Range` with the range's bounds and `If-Range` with the validator) into
/// one preallocated file, written at its offsets, at most `connections` at a time, in order (a
/// range starts when one ends). The file is hashed front to back as its contiguous prefix grows
/// (`FileHash`), so when the last range is in little is left to hash; ranges smaller than
/// size / connections (`ByteRange.pieces`) keep that prefix close behind the download.
///
/// How the service drives it: a job with `connections` > 1 whose size and validator (ETag or
/// Last-Modified) are known — from an earlier attempt's `TransferProgress` (`bytesExpected`,
/// `validator`) — starts one with `ByteRange.pieces(size:connections:)` and persists every range's
/// `next` from `onProgress`; after a fault, a cancel or a crash it starts one again with the ranges
/// as persisted (finished ones are skipped, each other range goes on from its `next`). A job whose
/// size or validator is unknown uses one plain `TransferEngine.start`. Every range is a transfer of
/// the engine, so it shares the bandwidth budget and takes one connection: count each against the
/// per-host limit.
public final class SegmentedDownload: Sendable {
    private struct State {
        var ranges: [ByteRange]
        var running: [Int: TransferID] = [:]
        /// The ranges not started yet, first to last.
        var waiting: [Int] = []
        var unfinished: [Int: TransferResult] = [:]
        var isCancelled = false
        /// The fallback transfer over one connection, once started.
        var single: TransferID?
        var notHonoured = false
        /// Set once the end is decided (fallback, hash or report): `begin` and the last range to
        /// complete may both find nothing running.
        var isEnding = false
        /// The first range response that delivered its bytes (for `SegmentedResult.contentDisposition`).
        var delivered: TransferResult?
    }

    private let engine: TransferEngine
    private let template: TransferRequest
    private let path: String
    private let size: Int64
    private let validator: String
    private let state: Mutex<State>
    private let connections: Int
    private let hasher: FileHash
    /// When the request's `totalTimeout` runs out, for the whole download: a range started later
    /// gets what is left of it, not a fresh one.
    private let deadline: ContinuousClock.Instant?
    private let onProgress: @Sendable (SegmentedProgress) -> Void
    private let onComplete: @Sendable (SegmentedResult) -> Void

    /// Preallocates the file (before returning: quick where the filesystem has fallocate, a write
    /// of zeros where glibc emulates it, so call it off the engine's queue), then starts the ranges
    /// of `ranges` that are not done yet, each from its `next`. The validator must be a strong
    /// ETag or a Last-Modified date (If-Range does not take weak ETags).
    /// - Parameters:
    ///   - request: the URL, headers, timeouts (`totalTimeout` for the whole download, not each
    ///     range), address policy, `maxSpeedBytesPerSecond` (per connection) and `extraDigest`; its
    ///     sink is not used.
    ///   - path: the partial file, preallocated to `size` here; bytes outside the ranges' unfinished
    ///     parts are kept as they are.
    ///   - connections: how many ranges run at once (nil: all of them).
    ///   - onProgress, onComplete: called on the engine's queue (`onComplete`, after hashing, on a
    ///     utility queue); keep them cheap. `onComplete` is called exactly once.
    public static func start(
        engine: TransferEngine, request: TransferRequest, path: String, size: Int64, validator: String,
        ranges: [ByteRange], connections: Int? = nil,
        onProgress: @escaping @Sendable (SegmentedProgress) -> Void,
        onComplete: @escaping @Sendable (SegmentedResult) -> Void
    ) -> SegmentedDownload {
        let download = SegmentedDownload(engine: engine, request: request, path: path, size: size, validator: validator,
                                         ranges: ranges, connections: max(1, connections ?? ranges.count),
                                         onProgress: onProgress, onComplete: onComplete)
        download.begin()
        return download
    }

    private init(engine: TransferEngine, request: TransferRequest, path: String, size: Int64, validator: String,
                 ranges: [ByteRange], connections: Int,
                 onProgress: @escaping @Sendable (SegmentedProgress) -> Void,
                 onComplete: @escaping @Sendable (SegmentedResult) -> Void) {
        self.engine = engine
        self.connections = connections
        hasher = FileHash(path: path, extra: request.extraDigest)
        deadline = request.totalTimeout.map { ContinuousClock.now + .seconds($0) }
        template = request
        self.path = path
        self.size = size
        self.validator = validator
        state = Mutex(State(ranges: ranges))
        self.onProgress = onProgress
        self.onComplete = onComplete
    }

    /// Stops every range; the download completes with the ranges as far as they got.
    public func cancel() {
        let ids = state.withLock { state in
            state.isCancelled = true
            return Array(state.running.values) + (state.single.map { [$0] } ?? [])
        }
        for id in ids { engine.cancel(id) }
    }

    private func begin() {
        if let failure = FileHash.preallocate(path, size: size) {
            return onComplete(SegmentedResult(ranges: state.withLock { $0.ranges }, unfinished: [:], failure: failure))
        }
        // Registered under the lock before any can complete, so that the last one to complete sees the others.
        let prefix = state.withLock { state in
            state.waiting = state.ranges.indices.filter { !state.ranges[$0].isDone }
            launch(&state)
            return Self.prefix(state.ranges)
        }
        hasher.advance(to: prefix)
        finishIfIdle()
    }

    /// Starts waiting ranges, first to last, while fewer than `connections` run.
    private func launch(_ state: inout State) {
        while state.running.count < connections, !state.waiting.isEmpty {
            let index = state.waiting.removeFirst()
            let range = state.ranges[index]
            var request = timedRequest()
            request.sink = .segment(path: path, from: range.next, to: range.end, validator: validator)
            state.running[index] = engine.start(request, onProgress: { [self] progress in
                rangeProgressed(index, progress)
            }, onComplete: { [self] result in
                rangeCompleted(index, result)
            })
        }
    }

    /// The request with what is left of the download's `totalTimeout` (at least a millisecond:
    /// curl takes 0 as no limit at all).
    private func timedRequest() -> TransferRequest {
        var request = template
        if let deadline { request.totalTimeout = max(0.001, (deadline - ContinuousClock.now).inSeconds) }
        return request
    }

    /// Where the file's contiguous prefix ends: the first range not done yet, as far as it got.
    private static func prefix(_ ranges: [ByteRange]) -> Int64 {
        var end: Int64 = 0
        for range in ranges.sorted(by: { $0.start < $1.start }) {
            guard range.start <= end else { break }
            end = max(end, range.next)
            guard range.isDone else { break }
        }
        return end
    }

    private func rangeProgressed(_ index: Int, _ progress: TransferProgress) {
        let report = state.withLock { state -> SegmentedProgress? in
            guard state.running[index] != nil, state.ranges[index].next != progress.bytesOnDisk else { return nil }
            state.ranges[index].next = min(progress.bytesOnDisk, state.ranges[index].end)
            return SegmentedProgress(ranges: state.ranges)
        }
        if let report {
            hasher.advance(to: Self.prefix(report.ranges))
            onProgress(report)
        }
    }

    private func rangeCompleted(_ index: Int, _ result: TransferResult) {
        let toCancel = state.withLock { state -> [TransferID] in
            state.running[index] = nil
            let range = state.ranges[index]
            // A cancelled or failed segment reports the offset written so far.
            state.ranges[index].next = min(max(result.bytesOnDisk, range.start), range.end)
            guard !state.ranges[index].isDone else {
                if state.delivered == nil { state.delivered = result }
                // The next range takes the connection, unless the download is ending anyway.
                if !state.isCancelled, !state.notHonoured, state.unfinished.isEmpty { launch(&state) }
                return []
            }
            state.unfinished[index] = result
            // A whole response to a range request: the other ranges will get the same, stop them.
            guard let status = result.httpStatus, (200..<300).contains(status), status != 206,
                  case .rangeMismatch? = result.failure, !state.notHonoured
            else { return [] }
            state.notHonoured = true
            return Array(state.running.values)
        }
        for id in toCancel { engine.cancel(id) }
        finishIfIdle()
    }

    /// Once no range runs: falls back to one connection, hashes the finished file, or reports how
    /// far the ranges got.
    private func finishIfIdle() {
        enum Next { case wait, fallBack, hash, report }
        let next = state.withLock { state -> Next in
            guard state.running.isEmpty, !state.isEnding else { return .wait }
            state.isEnding = true
            if state.notHonoured, !state.isCancelled { return .fallBack }
            return state.ranges.allSatisfy(\.isDone) && !state.isCancelled ? .hash : .report
        }
        switch next {
        case .wait: return
        case .fallBack: fallBack()
        case .hash: hash()
        case .report: report()
        }
    }

    private func report() {
        let result = state.withLock { SegmentedResult(ranges: $0.ranges, unfinished: $0.unfinished) }
        onComplete(result)
    }

    /// One plain transfer from the first byte, unless a cancel came first.
    private func fallBack() {
        var request = timedRequest()
        request.sink = .file(path: path, resumeValidator: nil)
        let started = state.withLock { locked -> Bool in
            guard !locked.isCancelled else { return false }
            locked.single = engine.start(request, onProgress: { _ in }, onComplete: { [self] result in
                let ranges = state.withLock { $0.ranges }
                onComplete(SegmentedResult(ranges: ranges, unfinished: [:], singleConnection: result))
            })
            return true
        }
        if !started { report() }
    }

    private func hash() {
        let (ranges, delivered) = state.withLock { ($0.ranges, $0.delivered) }
        hasher.finish(size: size) { [self] digests in
            var result = SegmentedResult(ranges: ranges, unfinished: [:])
            result.contentDisposition = delivered?.contentDisposition
            result.effectiveURL = delivered?.effectiveURL
            switch digests {
            case .success(let digests):
                result.sha256 = digests.sha256
                result.extraDigest = digests.extra
            case .failure(let failure):
                result.failure = failure
            }
            onComplete(result)
        }
    }
}
