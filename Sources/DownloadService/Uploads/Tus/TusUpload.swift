import Confinement
import Dispatch
import DownloadCore
import Logging
import Transfer

/// One attempt of a tus upload. First the server is asked what it takes (`OPTIONS`): a server
/// with the checksum extension gets each chunk's `Upload-Checksum`. Without a resource yet, one is
/// created and committed to the store before a byte goes, so that whatever happens next — a
/// fault, a crash, another node — goes on with it; with one, the server is asked how much it holds
/// (`HEAD`). Then the rest of the source goes in chunks of `chunkSize` (`PATCH`): a server that
/// keeps only whole requests loses at most one chunk to a fault. The source is checked against
/// its pin before each chunk.
///
/// It ends like a transfer, with one `TransferResult`: the last answer, `bytesOnDisk` the offset
/// the server confirmed, and — once the server holds the whole source — `bodySHA256`, the digest
/// of the source (`SourceHasher`). That the server held it is recorded first (`TusWitness`), for
/// an attempt after a stop that finds the resource gone.
final class TusUpload: QueueConfined, @unchecked Sendable {  // all mutable state only on `queue` (assertOnQueue)
    /// Persists the resource (as the job's `objectUpload`) and says whether the job was still
    /// this node's to write; called and answered on `queue`.
    typealias Commit = (ObjectUpload, @escaping (Bool) -> Void) -> Void

    let queue: DispatchQueue
    private let job: Download
    private let plan: UploadPlan
    private let source: SourceFile
    private let chunkSize: Int64
    private let template: TransferTemplate
    private let transfers: any TransferRunning
    private let commit: Commit
    private let witness: TusWitness
    private let clock: Clock
    private let logger: Logger
    private let onProgress: (TransferProgress) -> Void
    private let onComplete: (TransferResult) -> Void
    private let hasher: SourceHasher

    private var resource: String?
    /// What chunks are checked with, when the server offers the checksum extension.
    private var checksum: DigestAlgorithm?
    /// What the server confirmed it holds.
    private var offset: Int64 = 0
    private var sentThisAttempt: Int64 = 0
    private var current: TransferID?
    /// Offsets asked again after a `409`, and resources created anew after one was gone, this attempt.
    private var conflicts = 0
    private var recreated = 0
    private var stopped = false
    private var ended = false

    /// Conflicts and lost resources one attempt goes on from before it ends with the answer.
    static let maxConflicts = 3
    static let maxRecreated = 1

    init(job: Download, plan: UploadPlan, source: SourceFile, chunkSize: Int64, queue: DispatchQueue, template: TransferTemplate,
         transfers: any TransferRunning, commit: @escaping Commit, witness: TusWitness, clock: Clock, logger: Logger,
         onProgress: @escaping (TransferProgress) -> Void, onComplete: @escaping (TransferResult) -> Void) {
        self.job = job
        self.plan = plan
        self.source = source
        self.chunkSize = chunkSize
        self.queue = queue
        self.template = template
        self.transfers = transfers
        self.commit = commit
        self.witness = witness
        self.clock = clock
        self.logger = logger
        self.onProgress = onProgress
        self.onComplete = onComplete
        hasher = SourceHasher(source: source)
        resource = job.objectUpload?.tusResource
    }

    func start() {
        assertOnQueue()
        run(template.tusOptions(for: job, now: clock.now())) { result in
            // A server that does not answer OPTIONS still takes the core protocol.
            self.checksum = TusAnswer.checksumAlgorithm(result)
            if let resource = self.resource { self.askOffset(of: resource) } else { self.create() }
        }
    }

    /// Stops the attempt: the request under way ends as cancelled, and the attempt with it.
    func cancel() {
        assertOnQueue()
        stopped = true
        if let current { transfers.cancel(current) }
    }

    // MARK: - Steps

    private func create() {
        let url = job.currentURL
        run(template.tusCreation(for: job, plan: plan, now: clock.now())) { result in
            guard let created = TusAnswer.createdResource(result, asked: url) else { return self.end(result) }
            self.commit(.tus(resource: created)) { kept in
                guard kept, !self.stopped else { return self.end(TransferResult(failure: .cancelled)) }
                self.logger.info("tus upload created", metadata: ["download.id": "\(self.job.id)"])
                self.resource = created
                self.offset = 0
                self.sendChunk()
            }
        }
    }

    private func askOffset(of resource: String) {
        run(template.tusOffset(of: resource, for: job, now: clock.now())) { result in
            if TusAnswer.resourceGone(result) { return self.createAgain(after: result) }
            guard let offset = TusAnswer.offset(result), offset <= self.plan.pin.size else { return self.end(result) }
            self.offset = offset
            self.hasher.hash(upTo: offset)
            self.sendChunk()
        }
    }

    /// The server no longer has the resource: done, if it held the whole source before (a server
    /// may remove a finished upload's); otherwise a new one, from byte 0.
    private func createAgain(after result: TransferResult) {
        if let resource, witness.saw(resource) {
            logger.info("tus resource gone after it held the whole source", metadata: ["download.id": "\(job.id)"])
            offset = plan.pin.size
            return finish(answered: TransferResult(httpStatus: 204))
        }
        guard recreated < Self.maxRecreated else { return end(result) }
        recreated += 1
        logger.info("tus resource gone; creating another", metadata: ["download.id": "\(job.id)", "http.status": "\(result.httpStatus ?? 0)"])
        create()
    }

    private func sendChunk() {
        guard let resource else { return }
        if offset == plan.pin.size {
            witness.record(resource)
            return finish(answered: lastResult)
        }
        // A changed source must not go on: the settlement sees the pin differ and fails the job.
        guard source.pin == plan.pin else { return end(TransferResult(failure: .fileError("the source changed"), bytesOnDisk: offset)) }
        let start = offset
        let length = min(chunkSize, plan.pin.size - start)
        guard let checksum else { return send(to: resource, from: start, length: length, checksum: nil) }
        // The chunk's digest, read apart from the source's own, which follows what the server confirmed.
        SourceHasher(source: source, extra: checksum, from: start).digests(at: start + length) { digests in
            self.queue.async {
                guard let hex = checksum == .sha256 ? digests?.sha256 : digests?.extra,
                      let header = TusAnswer.checksumHeader(checksum, hex: hex)
                else { return self.end(TransferResult(failure: .fileError("the source could not be read to check a chunk"))) }
                self.send(to: resource, from: start, length: length, checksum: header)
            }
        }
    }

    private func send(to resource: String, from start: Int64, length: Int64, checksum: String?) {
        let request = template.tusChunk(to: resource, for: job, plan: plan, source: source, offset: start, length: length,
                                        checksum: checksum, now: clock.now())
        run(request, sentBefore: start) { result in
            self.sentThisAttempt += min(length, max(0, (TusAnswer.offset(result) ?? start) - start))
            if TusAnswer.resourceGone(result) { return self.createAgain(after: result) }
            // A conflicting offset is asked for again; a chunk that arrived other than it was sent is sent again.
            if result.failure == nil, result.httpStatus == 409 || TusAnswer.checksumRefused(result), self.conflicts < Self.maxConflicts {
                self.conflicts += 1
                return self.askOffset(of: resource)
            }
            guard let confirmed = TusAnswer.offset(result), confirmed > start, confirmed <= start + length else { return self.end(result) }
            self.offset = confirmed
            self.hasher.hash(upTo: confirmed)
            self.sendChunk()
        }
    }

    /// The server holds the whole source: the attempt ends with its digest and the server's answer.
    private func finish(answered answer: TransferResult?) {
        let size = plan.pin.size
        hasher.finish(at: size) { digest in
            self.queue.async {
                var result = answer ?? TransferResult(httpStatus: 204)
                result.bodySHA256 = digest
                if digest == nil { result.failure = .fileError("the source could not be read again to hash it") }
                self.end(result)
            }
        }
    }

    // MARK: - Requests

    private var lastResult: TransferResult?
    /// What the request under way goes on with when it answers.
    private var step: ((TransferResult) -> Void)?

    /// Runs one request of the attempt; `then` gets its result on `queue`, unless the attempt was stopped.
    private func run(_ request: TransferRequest, sentBefore: Int64 = 0, then: @escaping (TransferResult) -> Void) {
        guard !stopped else { return end(TransferResult(failure: .cancelled)) }
        step = then
        current = transfers.start(
            request,
            onProgress: { progress in self.queue.async { self.progressed(progress, sentBefore: sentBefore) } },
            onComplete: { result in self.queue.async { self.answered(result) } })
    }

    private func answered(_ result: TransferResult) {
        current = nil
        lastResult = result
        let then = step
        step = nil
        if stopped { return end(TransferResult(failure: .cancelled)) }
        then?(result)
    }

    private func progressed(_ progress: TransferProgress, sentBefore: Int64) {
        guard !ended, progress.bytesSent > 0 else { return }
        var sent = TransferProgress(bytesOnDisk: offset, bytesExpected: plan.pin.size)
        sent.bytesSent = sentBefore + progress.bytesSent
        onProgress(sent)
    }

    /// Ends the attempt with `result`, as far as the server confirmed.
    private func end(_ result: TransferResult) {
        guard !ended else { return }
        ended = true
        var ending = result
        ending.bytesOnDisk = offset
        ending.bytesSent = sentThisAttempt
        if let resource {
            ending.effectiveURL = resource
            // The Upload's reply shows where the upload lives.
            if ending.responseHeader("location") == nil { ending.responseHeaders.append((name: "location", value: resource)) }
        }
        onComplete(ending)
    }
}
