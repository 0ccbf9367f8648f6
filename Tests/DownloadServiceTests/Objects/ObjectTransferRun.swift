import Dispatch
import DownloadCore
@testable import DownloadService
import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Transfer

/// One object attempt driven by hand: the fake engine's origin download (whose bytes the test
/// writes into the staging file before reporting them), a bucket that answers as `s3` says, and a
/// store that keeps each commit of the upload at once, or — with `holdPartCommits` — when the test
/// answers it.
final class ObjectTransferRun: Sendable {
    /// Small parts, each a whole number of disk blocks.
    static let partSize: Int64 = 4096

    let directory: String
    let queue = DispatchQueue(label: "fetchd.test.object-transfer")
    let s3: FakeS3
    let transfers = FakeTransfers()
    let job: Download
    let staging: StagingFile
    let transfer: ObjectTransfer
    private let store = StoreStandIn()
    private let endings = Endings()

    init(_ job: Download, s3: FakeS3 = FakeS3()) throws {
        self.job = job
        self.s3 = s3
        directory = NSTemporaryDirectory() + "fetchd-object-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        staging = StagingFile(path: directory + "/" + job.id)
        let (store, endings) = (store, endings)
        transfer = ObjectTransfer(
            job: job, connections: 1, extra: TransferTemplate.extraDigest(for: job, digestFile: nil), queue: queue, client: s3.client,
            partSize: Self.partSize, staging: staging, transfers: transfers,
            commit: { upload, then in store.commit(upload, then: then) }, logger: ServiceFixture.quiet, onProgress: { _ in },
            onComplete: { result in endings.results.withLock { $0.append(result) } })
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: - The attempt

    /// Starts the attempt as the runner does, with the request for `resumeFrom` bytes of partial data.
    func start(resumeFrom: Int64 = 0) {
        var request = TransferRequest(url: job.currentURL, sink: .file(path: staging.path, resumeValidator: resumeFrom > 0 ? job.validator : nil))
        request.extraDigest = TransferTemplate.extraDigest(for: job, digestFile: nil)
        queue.sync { transfer.start(request) }
    }

    /// Stops the attempt, as a client's cancel does.
    func cancel() {
        queue.sync { transfer.cancel() }
    }

    /// Waits for what the queue was asked to do so far.
    func turn() {
        queue.sync {}
    }

    /// The origin download's request as the engine was given it.
    var originRequest: TransferRequest? { transfers.all.first?.request }

    /// The origin download's write limit now.
    var writeLimit: Int64? { originRequest?.writeLimit?.limit }

    // MARK: - The origin, as the engine reports it

    /// Writes `bytes` at `offset` of the staging file, as the engine writes the origin's body.
    func write(_ bytes: ArraySlice<UInt8>, at offset: Int64) throws {
        let fd = open(staging.path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        guard written == bytes.count else { throw CocoaError(.fileWriteUnknown) }
    }

    /// The engine's progress report: `onDisk` bytes in the file; the response's body started at
    /// `bodyStart` (0: the whole representation, replacing the file).
    func progress(onDisk: Int64, bodyStart: Int64? = 0, contentDisposition: String? = nil) {
        var progress = TransferProgress(bytesOnDisk: onDisk, bytesExpected: nil, validator: "\"v1\"")
        progress.bodyStart = bodyStart
        progress.contentDisposition = contentDisposition
        progress.effectiveURL = job.currentURL
        transfers.progress(job.id, progress)
    }

    /// The file's writer wrote up to `length`, which it tells the write limit after each write
    /// (while the download waits at the limit too, when no progress is reported).
    func writerWrote(_ length: Int64) {
        originRequest?.writeLimit?.written(length)
    }

    /// The origin's whole body is in the file: `onDisk` bytes.
    func originEnds(onDisk: Int64, status: Int = 200, contentDisposition: String? = nil) {
        var result = TransferResult(httpStatus: status, bytesOnDisk: onDisk, bytesThisAttempt: onDisk, bytesExpected: onDisk,
                                    validator: "\"v1\"", effectiveURL: job.currentURL)
        result.contentDisposition = contentDisposition
        result.bodyComplete = true
        transfers.complete(job.id, with: result)
    }

    // MARK: - What came of it

    /// How the attempt ended, once it has (nil if it did not within the wait).
    func ended() async -> TransferResult? {
        _ = await eventually { endings.results.withLock { !$0.isEmpty } }
        return endings.results.withLock { $0.first }
    }

    /// How many times the attempt ended so far.
    var endingCount: Int { endings.results.withLock { $0.count } }

    /// Commits of an upload with parts wait for `answerCommit` while this is set.
    func holdPartCommits() {
        store.holdPartCommits.store(true, ordering: .sequentiallyConsistent)
    }

    /// The store keeps no commit after the first `kept` of the attempt: the job was cancelled or
    /// taken over.
    func refuseCommits(after kept: Int = 0) {
        store.keptCommits.store(kept, ordering: .sequentiallyConsistent)
    }

    /// Each upload handed to the store, in order (nil: the upload forgotten).
    var commits: [ObjectUpload?] { queue.sync { store.uploads } }

    /// Commits waiting for the store's answer.
    var pendingCommitCount: Int { queue.sync { store.pending.count } }

    /// The store answers the oldest commit still waiting: kept, or not (the job is no longer this node's).
    func answerCommit(kept: Bool) {
        queue.sync {
            guard !store.pending.isEmpty else {
                Issue.record("no commit waits for an answer")
                return
            }
            store.pending.removeFirst()(kept)
        }
    }

    /// The staging file's bytes in `range`.
    func stagedBytes(_ range: Range<Int64>) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: staging.path) else { return [] }
        defer { try? handle.close() }
        try? handle.seek(toOffset: UInt64(range.lowerBound))
        return (try? handle.read(upToCount: range.count)).map { [UInt8]($0) } ?? []
    }
}

/// The store as the attempt commits its upload to it: each commit kept at once, or held for the
/// test to answer. `uploads` and `pending` are used only on the run's queue, where the attempt
/// commits and the test answers.
private final class StoreStandIn: @unchecked Sendable {
    var uploads: [ObjectUpload?] = []
    var pending: [(Bool) -> Void] = []
    let holdPartCommits = Atomic<Bool>(false)

    /// Commits answered "kept"; every later one is answered "not kept": the job is no longer this node's.
    let keptCommits = Atomic<Int>(.max)

    func commit(_ upload: ObjectUpload?, then: @escaping (Bool) -> Void) {
        uploads.append(upload)
        if upload?.parts.isEmpty == false, holdPartCommits.load(ordering: .sequentiallyConsistent) {
            pending.append(then)
        } else {
            then(uploads.count <= keptCommits.load(ordering: .sequentiallyConsistent))
        }
    }
}

/// How the attempt ended, each time it did.
private final class Endings: Sendable {
    let results = Mutex<[TransferResult]>([])
}
