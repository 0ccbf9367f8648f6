import Confinement
import Dispatch
import DownloadCore
import Logging
import Transfer

/// One attempt of a job whose destination is an object. The origin's body is downloaded into the
/// staging file as for a file, and goes up as the parts of a multipart upload while it arrives:
/// each part is read back, hashed into the object's digest, uploaded, and committed with its ETag
/// and the digest's state — only then is its stretch of the file given back to the disk, and the
/// download let on (`WriteLimit`: at most `stagedParts` parts beyond the committed ones on disk).
///
/// A job on several connections whose origin honours `Range` with a strong validator fetches
/// its parts instead, one ranged request a part, a window of them at once (`PartWindow`): its
/// first request asks for the first part only, to learn the size and validator.
///
/// It ends like a transfer, with one `TransferResult`: once every byte is in and hashed, with the
/// object's digests (every part is up, or — for an object of one part at most — none, for a
/// `PutObject` by the caller after the checks); otherwise with what failed, the storage's
/// failures as `TransferFailure.storage`. The caller checks the digests and completes the object.
final class ObjectTransfer: QueueConfined, @unchecked Sendable {  // all mutable state only on `queue` (assertOnQueue)
    /// Persists the upload as it now stands (nil: none) and says whether the job was still this
    /// node's to write; called and answered on `queue`.
    typealias Commit = (ObjectUpload?, @escaping (Bool) -> Void) -> Void

    let queue: DispatchQueue
    private let job: Download
    private let client: ObjectStorageClient
    private let partSize: Int64
    /// The digest computed beside SHA-256: the algorithm of the job's checksum or digest file.
    private let extra: DigestAlgorithm?
    /// Connections to the origin the attempt holds.
    private let connections: Int
    private let stagedParts: Int64
    private let staging: StagingFile
    private let commit: Commit
    private let onProgress: (TransferProgress) -> Void
    private let onComplete: (TransferResult) -> Void
    private let logger: Logger
    /// How far the download may write, from its start.
    private var writeLimit: WriteLimit?
    private let transfers: any TransferRunning

    /// The upload as committed or being committed; nil before its first part.
    private(set) var upload: ObjectUpload?
    /// The object's digests over the bytes before `partsEnd`.
    private var digest: ResumableDigest
    /// Where the bytes not yet in a part start.
    private var partsEnd: Int64
    private var onDisk: Int64 = 0
    /// The end of the parts committed before this attempt: its response must not start before it.
    private var resumedAt: Int64 = 0
    private var responseChecked = false
    private var response: (contentDisposition: String?, effectiveURL: String?) = (nil, nil)
    /// A part or a storage request is under way; `pump` waits for it.
    private var busy = false
    /// Moves on when the object starts over: what an earlier upload's requests answer is then ignored.
    private var epoch = 0
    private var originID: TransferID?
    private var originResult: TransferResult?
    /// The parts being fetched over several connections, once the first part showed they can be.
    private var window: PartWindow?
    /// A part's request that failed: the attempt ends with it once no other is under way.
    private var windowFailure: TransferResult?
    /// The request every origin request of the attempt is made from.
    private var request = TransferRequest(url: "", sink: .memory(limit: 0))
    private var storageFailure: ObjectStorageFailure?
    private var stopped = false
    private var ended = false

    init(job: Download, connections: Int, extra: DigestAlgorithm?, queue: DispatchQueue, client: ObjectStorageClient, partSize: Int64, staging: StagingFile,
         transfers: any TransferRunning, commit: @escaping Commit, logger: Logger,
         onProgress: @escaping (TransferProgress) -> Void, onComplete: @escaping (TransferResult) -> Void) {
        self.job = job
        self.queue = queue
        self.client = client
        self.partSize = partSize
        self.connections = max(1, connections)
        stagedParts = Int64(self.connections) + 1
        self.staging = staging
        self.transfers = transfers
        self.commit = commit
        self.logger = logger
        self.onProgress = onProgress
        self.onComplete = onComplete
        self.extra = extra
        // An upload whose digest state cannot be restored starts over (it is aborted by the next commit).
        if let upload = job.objectUpload, let restored = upload.parts.isEmpty ? ResumableDigest(extra: extra)
            : ResumableDigest(state: upload.digestState, extra: extra) {
            self.upload = upload
            digest = restored
            partsEnd = upload.end
        } else {
            digest = ResumableDigest(extra: extra)
            partsEnd = 0
        }
    }

    private var location: ObjectLocation? {
        guard let upload, let bucket = job.destination.bucket else { return nil }
        return ObjectLocation(bucket: bucket, key: upload.key)
    }

    // MARK: - Running

    /// Starts the origin's download from the end of the committed parts (or of the staging file,
    /// when it holds more of the same representation).
    func start(_ request: TransferRequest) {
        assertOnQueue()
        if job.objectUpload != nil, upload == nil { restartObject(abandoning: job.objectUpload) }
        do {
            // Without an upload, bytes from the start are needed: a file whose parts went to an
            // upload since forgotten starts over.
            if upload == nil, staging.beginsWithHole { try staging.setLength(0) }
            if staging.length < partsEnd { try staging.setLength(partsEnd) }
        } catch {
            return end(TransferResult(failure: .fileError("\(error)"), bytesOnDisk: partsEnd))
        }
        self.request = request
        if connections > 1, partsEnd > 0, let size = job.bytesExpectedFromOrigin, let validator = job.validator, !validator.hasPrefix("W/") {
            // Parts of a segmented object go on from the committed ones, each asked for anew.
            response = (nil, nil)
            return beginWindow(size: size, validator: validator)
        }
        startOrigin(resumingWith: staging.length > 0 ? job.validator : nil, firstPartOnly: connections > 1 && partsEnd == 0)
    }

    /// One request for the rest of the file from the end of the staging file (`validator`: as
    /// If-Range), or with `firstPartOnly` for its first part only.
    private func startOrigin(resumingWith validator: String?, firstPartOnly: Bool) {
        resumedAt = partsEnd
        responseChecked = false
        originResult = nil
        let writeLimit = WriteLimit(partsEnd + stagedParts * partSize) { length in self.queue.async { self.written(length) } }
        self.writeLimit = writeLimit
        var request = request
        if case .file(let path, let given) = request.sink, let resume = given ?? validator {
            // Committed parts count as received wherever the partial file is (this node may have
            // taken the job over from another): the download goes on from them.
            request.sink = .file(path: path, resumeValidator: resume)
        }
        request.hashesFile = false
        request.writeLimit = writeLimit
        request.firstPartLength = firstPartOnly ? partSize : nil
        originID = transfers.start(
            request,
            onProgress: { progress in self.queue.async { self.progressed(progress) } },
            onComplete: { result in self.queue.async { self.originEnded(result) } })
    }

    /// Stops the attempt: the origin's download at once, an upload request once it answers.
    func cancel() {
        assertOnQueue()
        stopped = true
        stopOrigin()
    }

    private func stopOrigin() {
        if let originID, originResult == nil { transfers.cancel(originID) }
        for (_, fetch) in window?.fetching ?? [:] { transfers.cancel(fetch.id) }
    }

    private func progressed(_ progress: TransferProgress) {
        guard !ended else { return }
        if let start = progress.bodyStart, !responseChecked {
            responseChecked = true
            // The origin sends the file from before the committed parts: another representation.
            if start < resumedAt { restartObject(abandoning: upload) }
        }
        onDisk = progress.bytesOnDisk
        if progress.contentDisposition != nil || progress.effectiveURL != nil {
            response = (progress.contentDisposition, progress.effectiveURL)
        }
        onProgress(progress)
        pump()
    }

    /// The staging file is written up to `length` (told while the download waits at its limit too).
    private func written(_ length: Int64) {
        guard !ended, originResult == nil else { return }
        onDisk = length
        pump()
    }

    private func originEnded(_ result: TransferResult) {
        if result.partReceived, !stopped, storageFailure == nil {
            if let url = result.effectiveURL { response = (result.contentDisposition, url) }
            guard let size = result.bytesExpected, let validator = result.validator, !validator.hasPrefix("W/") else {
                // Without a strong validator no part can be asked for on its own: the rest comes
                // over one connection.
                return startOrigin(resumingWith: result.validator ?? "", firstPartOnly: false)
            }
            return beginWindow(size: size, validator: validator, firstPartEnd: result.bytesOnDisk)
        }
        originResult = result
        onDisk = result.bytesOnDisk
        if let url = result.effectiveURL { response = (result.contentDisposition, url) }
        pump()
    }

    /// Does the next thing there is to do, when nothing is under way.
    private func pump() {
        guard !ended else { return }
        if let window { return pumpParts(window) }
        guard !busy else { return }
        let origin = originResult
        if stopped || storageFailure != nil || (origin != nil && origin?.bodyComplete != true) {
            // The origin's download still ends on its own (cancelled, or cut short by the failure).
            guard let origin else { return }
            return end(failed(origin))
        }
        let ready = onDisk - partsEnd
        if let origin, ready == 0 { return end(completed(origin)) }
        if upload == nil {
            // An object of one part at most goes up whole with PutObject, after the checks.
            if origin != nil, partsEnd == 0, onDisk <= partSize { return hashRest() }
            guard ready >= partSize || origin != nil else { return }
            return createUpload()
        }
        if ready >= partSize || (origin != nil && ready > 0) { sendPart(partsEnd..<partsEnd + min(ready, partSize)) }
    }

    // MARK: - Parts over several connections

    /// `firstPartEnd`: where the first request's bytes end, which hold the first part when it ends there.
    private func beginWindow(size: Int64, validator: String, firstPartEnd: Int64? = nil) {
        var window = PartWindow(size: size, partSize: partSize, validator: validator, connections: connections)
        if let firstPartEnd, firstPartEnd == window.range(of: 0).upperBound { window.ended(0, complete: true) }
        self.window = window
        logger.info("object goes on over several connections",
                    metadata: ["download.id": "\(job.id)", "connections": "\(connections)", "bytes": "\(partsEnd)"])
        pump()
    }

    private func pumpParts(_ window: PartWindow) {
        let first = window.index(at: partsEnd)
        if stopped || storageFailure != nil || windowFailure != nil {
            stopOrigin()
            guard window.fetching.isEmpty, !busy else { return }
            var last = windowFailure ?? TransferResult(failure: .cancelled)
            last.bytesOnDisk = partsEnd
            return end(failed(last))
        }
        if partsEnd == window.size, !busy {
            var whole = TransferResult(httpStatus: 206, bytesOnDisk: window.size, bytesExpected: window.size, validator: window.validator)
            (whole.contentDisposition, whole.effectiveURL) = response
            whole.bodyComplete = true
            return end(completed(whole))
        }
        for index in window.toStart(first: first) { fetch(index, of: window) }
        guard !busy else { return }
        if upload == nil { return createUpload() }
        if window.fetched.contains(first) { sendPart(window.range(of: first)) }
    }

    private func fetch(_ index: Int, of window: PartWindow) {
        let range = window.range(of: index)
        var request = request
        request.sink = .segment(path: staging.path, from: range.lowerBound, to: range.upperBound, validator: window.validator)
        request.firstPartLength = nil
        let id = transfers.start(
            request,
            onProgress: { progress in self.queue.async { self.partProgressed(index, progress) } },
            onComplete: { result in self.queue.async { self.partEnded(index, result) } })
        self.window?.started(index, id)
    }

    private func partProgressed(_ index: Int, _ progress: TransferProgress) {
        guard !ended, var window else { return }
        window.progressed(index, to: progress.bytesOnDisk)
        self.window = window
        onProgress(TransferProgress(bytesOnDisk: partsEnd + window.bytesIn(from: window.index(at: partsEnd)),
                                    bytesExpected: window.size, validator: window.validator))
    }

    private func partEnded(_ index: Int, _ result: TransferResult) {
        guard var window else { return }
        let complete = result.failure == nil && result.bytesOnDisk == window.range(of: index).upperBound
        window.ended(index, complete: complete)
        self.window = window
        if !complete, windowFailure == nil, !stopped { windowFailure = result }
        pump()
    }

    // MARK: - The upload

    private func createUpload() {
        busy = true
        let (epoch, bucket, client, mustBeNew) = (epoch, job.destination.bucket ?? "", client, !job.overwrite && !job.renameOnConflict)
        ObjectNaming(client: client).choose(for: job, contentDisposition: response.contentDisposition,
                                            effectiveURL: response.effectiveURL) { chosen in
            guard case .success(let key) = chosen else { return self.queue.async { self.storageFailed(chosen, epoch: epoch) } }
            let location = ObjectLocation(bucket: bucket, key: key)
            client.createMultipartUpload(location) { created in
                guard case .success(let uploadID) = created else { return self.queue.async { self.storageFailed(created, epoch: epoch) } }
                let new = ObjectUpload(key: key, uploadID: uploadID)
                guard mustBeNew else { return self.queue.async { self.created(new, epoch: epoch) } }
                // With onConflict: fail, an object already there fails the job now rather than
                // after the whole download (the final write is conditional all the same).
                client.objectExists(location) { exists in
                    self.queue.async {
                        guard case .success(false) = exists else {
                            self.abort(new)
                            let failure = if case .failure(let failure) = exists { failure } else { ObjectStorageFailure.exists }
                            return self.storageFailed(Result<Void, ObjectStorageFailure>.failure(failure), epoch: epoch)
                        }
                        self.created(new, epoch: epoch)
                    }
                }
            }
        }
    }

    /// The upload is committed before its first part goes up: a crash from here on finds it to
    /// resume or abort, never an upload nobody knows of.
    private func created(_ new: ObjectUpload, epoch: Int) {
        guard epoch == self.epoch, !ended else { return abort(new) }
        upload = new
        commit(new) { kept in
            if !kept {
                // The job is no longer this attempt's to write (cancelled, taken over).
                self.abort(new)
                self.upload = nil
                self.stopped = true
            }
            self.busy = false
            self.pump()
        }
    }

    private func sendPart(_ range: Range<Int64>) {
        busy = true
        let (epoch, number) = (epoch, (upload?.parts.count ?? 0) + 1)
        hash(range) { hashed in
            switch hashed {
            case .failure(let failure):
                self.busy = false
                self.storageFailure = .unavailable("\(failure)")
                self.pump()
            case .success(let (sha256, next)):
                self.upload(part: number, range, sha256: sha256, digest: next, epoch: epoch)
            }
        }
    }

    /// Reads and hashes `range` off the queue (a part is megabytes); `then` gets, on the queue, the
    /// stretch's SHA-256 and the object's digest after it.
    private func hash(_ range: Range<Int64>,
                      then: @escaping @Sendable (Result<(String, ResumableDigest), StagingFile.Failure>) -> Void) {
        let (staging, start) = (staging, digest)
        DispatchQueue.global(qos: .utility).async {
            var next = start
            let hashed = Result { () throws(StagingFile.Failure) -> (String, ResumableDigest) in
                let sha256 = try staging.hash(range, into: &next)
                return (sha256, next)
            }
            self.queue.async { then(hashed) }
        }
    }

    private func upload(part number: Int, _ range: Range<Int64>, sha256: String, digest next: ResumableDigest, epoch: Int) {
        guard epoch == self.epoch, let upload, let location, !stopped else {
            busy = false
            return pump()
        }
        let body = TransferRequest.FileRange(path: staging.path, offset: range.lowerBound, length: Int64(range.count))
        client.uploadPart(location, uploadID: upload.uploadID, number: number, body: body, sha256: sha256) { sent in
            self.queue.async {
                guard case .success(let part) = sent else { return self.storageFailed(sent, epoch: epoch) }
                self.sent(ObjectUpload.Part(number: part.number, size: part.size, etag: part.etag), range, digest: next, epoch: epoch)
            }
        }
    }

    private func sent(_ part: ObjectUpload.Part, _ range: Range<Int64>, digest next: ResumableDigest, epoch: Int) {
        busy = false
        guard epoch == self.epoch, var updated = upload else { return pump() }
        updated.parts.append(part)
        updated.digestState = next.state
        upload = updated
        digest = next
        if var window {
            window.uploaded(window.index(at: range.lowerBound))
            self.window = window
        }
        partsEnd = range.upperBound
        let (staging, writeLimit, staged) = (staging, writeLimit, stagedParts * partSize)
        commit(updated) { kept in
            guard kept else { return }
            // Counted as kept only now: its bytes leave the disk, and the download may go on.
            staging.release(range)
            writeLimit?.raise(to: range.upperBound + staged)
        }
        pump()
    }

    /// The last bytes of an object small enough for one `PutObject`: hashed, sent by the caller.
    private func hashRest() {
        busy = true
        let range = partsEnd..<onDisk
        hash(range) { hashed in
            self.busy = false
            switch hashed {
            case .failure(let failure): self.storageFailure = .unavailable("\(failure)")
            case .success(let (_, next)):
                self.digest = next
                self.partsEnd = range.upperBound
            }
            self.pump()
        }
    }

    private func storageFailed<Success>(_ answer: Result<Success, ObjectStorageFailure>, epoch: Int) {
        guard case .failure(let failure) = answer else { return }
        busy = false
        if epoch == self.epoch {
            // A gone upload is forgotten now; the settlement drops the staged bytes with it.
            if failure == .noSuchUpload { restartObject(abandoning: nil) }
            storageFailure = failure
            stopOrigin()
        }
        pump()
    }

    /// The object starts over from its first byte: a new representation, or an upload that is
    /// gone. The old upload is forgotten and aborted.
    private func restartObject(abandoning old: ObjectUpload?) {
        epoch += 1
        if let old { abort(old) }
        if upload != nil || job.objectUpload != nil { commit(nil) { _ in } }
        upload = nil
        digest = ResumableDigest(extra: extra)
        partsEnd = 0
        writeLimit?.raise(to: stagedParts * partSize)
        logger.info("object starts over", metadata: ["download.id": "\(job.id)"])
    }

    private func abort(_ old: ObjectUpload) {
        guard let bucket = job.destination.bucket else { return }
        client.abortMultipartUpload(ObjectLocation(bucket: bucket, key: old.key), uploadID: old.uploadID) { _ in }
    }

    // MARK: - Ending

    private func completed(_ origin: TransferResult) -> TransferResult {
        var result = origin
        let digests = digest.finalize()
        result.sha256 = digests.sha256
        result.extraDigest = digests.extra
        return result
    }

    private func failed(_ origin: TransferResult) -> TransferResult {
        var result = origin
        if let storageFailure { result.failure = .storage(storageFailure) }
        result.sha256 = nil
        return result
    }

    private func end(_ result: TransferResult) {
        guard !ended else { return }
        ended = true
        onComplete(result)
    }
}
