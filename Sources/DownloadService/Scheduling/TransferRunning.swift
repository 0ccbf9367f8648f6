import Transfer

/// What the scheduler needs of the transfer engine: start an attempt and stop it. The engine
/// is the one implementation; tests stand in for it to settle attempts as they choose.
protocol TransferRunning: Sendable {
    /// `onProgress` runs on the engine's queue, `onComplete` exactly once, after the last
    /// `onProgress` (on the engine's queue or a file queue).
    func start(_ request: TransferRequest, onProgress: @escaping @Sendable (TransferProgress) -> Void,
               onComplete: @escaping @Sendable (TransferResult) -> Void) -> TransferID
    /// The attempt completes with `.cancelled`, its file left as it is.
    func cancel(_ id: TransferID)
    /// An attempt over `connections` at a time: the ranges of `ranges` not done yet, each from its
    /// `next`, into the file at `path` (preallocated to `size`); see `SegmentedDownload.start`.
    func startSegments(_ request: TransferRequest, path: String, size: Int64, validator: String, ranges: [ByteRange],
                       connections: Int,
                       onProgress: @escaping @Sendable (SegmentedProgress) -> Void,
                       onComplete: @escaping @Sendable (SegmentedResult) -> Void) -> any SegmentsRunning
}

/// A segmented attempt, to stop: it completes with the ranges as far as they got.
protocol SegmentsRunning: Sendable {
    func cancel()
}

extension SegmentedDownload: SegmentsRunning {}

extension TransferEngine: TransferRunning {
    func startSegments(_ request: TransferRequest, path: String, size: Int64, validator: String, ranges: [ByteRange],
                       connections: Int,
                       onProgress: @escaping @Sendable (SegmentedProgress) -> Void,
                       onComplete: @escaping @Sendable (SegmentedResult) -> Void) -> any SegmentsRunning {
        SegmentedDownload.start(engine: self, request: request, path: path, size: size, validator: validator, ranges: ranges,
                                connections: connections, onProgress: onProgress, onComplete: onComplete)
    }
}
