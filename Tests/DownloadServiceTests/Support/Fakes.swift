@testable import DownloadService
import Persistence
import Synchronization
import Testing
@testable import Transfer

/// Time that moves only when the test moves it.
final class FakeClock: Sendable {
    private let millis: Atomic<Int64>

    init(_ start: Int64) {
        millis = Atomic(start)
    }

    var now: Int64 { millis.load(ordering: .sequentiallyConsistent) }

    var clock: Clock { Clock { self.now } }

    func advance(by duration: Duration) {
        millis.add(duration.wholeMilliseconds, ordering: .sequentiallyConsistent)
    }
}

/// Stands in for the transfer engine: records every attempt started and ends it when the test says.
final class FakeTransfers: TransferRunning {
    struct Started: Sendable {
        let id: TransferID
        let request: TransferRequest
        let onComplete: @Sendable (TransferResult) -> Void
        let onProgress: @Sendable (TransferProgress) -> Void

        /// The job it is an attempt of: the fixture's jobs fetch `/<id>`.
        var jobID: String { request.url.split(separator: "/").last.map(String.init) ?? "" }

        /// The partial file the attempt writes to.
        var partialPath: String {
            guard case .file(let path, _) = request.sink else { return "" }
            return path
        }
    }

    private let started = Mutex<[Started]>([])

    /// Every attempt started so far, in order.
    var all: [Started] { started.withLock { $0 } }
    /// The jobs of the attempts started so far, in order.
    var jobIDs: [String] { all.map(\.jobID) }

    func start(_ request: TransferRequest, onProgress: @escaping @Sendable (TransferProgress) -> Void,
               onComplete: @escaping @Sendable (TransferResult) -> Void) -> TransferID {
        started.withLock { list in
            let id = TransferID(rawValue: UInt64(list.count + 1))
            list.append(Started(id: id, request: request, onComplete: onComplete, onProgress: onProgress))
            return id
        }
    }

    private let cancelledIDs = Mutex<[TransferID]>([])

    /// The attempts cancelled so far, in order.
    var cancelled: [Started] { cancelledIDs.withLock { ids in ids.compactMap { id in all.first { $0.id == id } } } }

    /// As the engine does: the attempt ends as cancelled with its file left as it is.
    func cancel(_ id: TransferID) {
        guard let attempt = all.first(where: { $0.id == id }) else { return }
        cancelledIDs.withLock { $0.append(id) }
        attempt.onComplete(TransferResult(failure: .cancelled, bytesOnDisk: fileSize(attempt.partialPath)))
    }

    /// Reports `progress` for the latest attempt of a job.
    func progress(_ jobID: String, _ progress: TransferProgress) {
        all.last { $0.jobID == jobID }?.onProgress(progress)
    }

    /// Ends the latest attempt of a job with `result`.
    func complete(_ jobID: String, with result: TransferResult) {
        all.last { $0.jobID == jobID }?.onComplete(result)
    }

    /// Ends the latest attempt of a job as the engine would after a whole 200 body was written.
    func succeed(_ jobID: String, body: [UInt8]) throws {
        let attempt = try #require(all.last { $0.jobID == jobID })
        let digest = try writeFile(attempt.partialPath, body)
        let size = Int64(body.count)
        complete(jobID, with: TransferResult(httpStatus: 200, bytesOnDisk: size, bytesThisAttempt: size,
                                             bytesExpected: size, sha256: digest))
    }

    /// A segmented attempt as it was asked for, to report progress of and end.
    struct SegmentsStarted: Sendable {
        let request: TransferRequest
        let size: Int64
        let validator: String
        let ranges: [ByteRange]
        let connections: Int
        let onProgress: @Sendable (SegmentedProgress) -> Void
        let onComplete: @Sendable (SegmentedResult) -> Void
    }

    private let segmentsStarted = Mutex<[SegmentsStarted]>([])
    private let segmentsCancelled = Atomic<Int>(0)

    /// Every segmented attempt started so far, in order.
    var segments: [SegmentsStarted] { segmentsStarted.withLock { $0 } }
    /// How many segmented attempts were cancelled.
    var segmentsCancels: Int { segmentsCancelled.load(ordering: .sequentiallyConsistent) }

    /// Records the segmented attempt, which ends when the test says or when it is cancelled.
    func startSegments(_ request: TransferRequest, path: String, size: Int64, validator: String, ranges: [ByteRange],
                       connections: Int, onProgress: @escaping @Sendable (SegmentedProgress) -> Void,
                       onComplete: @escaping @Sendable (SegmentedResult) -> Void) -> any SegmentsRunning {
        segmentsStarted.withLock {
            $0.append(SegmentsStarted(request: request, size: size, validator: validator, ranges: ranges, connections: connections,
                                      onProgress: onProgress, onComplete: onComplete))
        }
        return FakeSegments {
            self.segmentsCancelled.add(1, ordering: .sequentiallyConsistent)
            onComplete(SegmentedResult(ranges: ranges, unfinished: [:]))
        }
    }

    /// As the engine does: cancelled, the ranges end as far as they got, with no failure of their own.
    private struct FakeSegments: SegmentsRunning {
        let cancelled: @Sendable () -> Void

        func cancel() { cancelled() }
    }
}

/// Stands in for the HTTP sender of webhooks: records each delivery sent and answers when the test says.
final class FakeWebhookSender: WebhookSending {
    struct Sent: Sendable {
        let delivery: WebhookDelivery
        let timestamp: Int64
        let answer: @Sendable (TransferResult) -> Void
    }

    private let sent = Mutex<[Sent]>([])

    var all: [Sent] { sent.withLock { $0 } }

    func send(_ delivery: WebhookDelivery, timestamp: Int64, completion: @escaping @Sendable (TransferResult) -> Void) {
        sent.withLock { $0.append(Sent(delivery: delivery, timestamp: timestamp, answer: completion)) }
    }
}
