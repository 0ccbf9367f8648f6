import Confinement
import Dispatch
import DownloadCore
import Logging
import Transfer

/// One attempt of a job whose destination is an object. The origin's body is downloaded into the
/// staging file as for a file, and goes up as the parts of a multipart upload while it arrives
/// (`PartUploads`); a committed part's stretch of the file is given back to the disk, and only
/// then is the download let on (`WriteLimit`: at most `stagedParts` parts beyond the committed
/// ones on disk).
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
    /// Connections to the origin the attempt holds.
    private let connections: Int
    /// Parts on disk at most: one per connection, and the one going up.
    private let stagedParts: Int64
    private let staging: StagingFile
    private let transfers: any TransferRunning
    private let commit: Commit
    private let onProgress: (TransferProgress) -> Void
    private let onComplete: (TransferResult) -> Void
    private let logger: Logger
    private let parts: PartUploads

    /// How far the download may write, from its start.
    private var writeLimit: WriteLimit?
    /// Where the disk under the staging file has been given back up to.
    private var releasedEnd: Int64
    private var onDisk: Int64 = 0
    /// The end of the parts committed when the current request started: its response must not start before it.
    private var resumedAt: Int64 = 0
    private var responseChecked = false
    private var response: (contentDisposition: String?, effectiveURL: String?) = (nil, nil)
    /// The upload is being created; nothing goes up until it is.
    private var creating = false
    /// An upload the object no longer goes on with is being aborted (`abandon`); nothing goes up until it is.
    private var abandoning = false
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

    init(job: Download, connections: Int, extra: DigestAlgorithm?, queue: DispatchQueue, client: ObjectStorageClient, partSize: Int64,
         staging: StagingFile, transfers: any TransferRunning, commit: @escaping Commit, logger: Logger,
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
        releasedEnd = job.objectUpload?.end ?? 0
        parts = PartUploads(queue: queue, client: client, bucket: job.destination.bucket ?? "", staging: staging, extra: extra,
                            maxInFlight: Int(stagedParts), resuming: job.objectUpload.flatMap { $0.isBeingCreated || $0.isBeingPut ? nil : $0 },
                            commit: commit)
        parts.onCommitted = { end in self.committed(upTo: end) }
        parts.onChange = { self.pump() }
    }

    /// The upload with every part committed so far; nil before it is created.
    var upload: ObjectUpload? { parts.upload }

    // MARK: - Running

    /// Starts the origin's download from the end of the committed parts (or of the staging file,
    /// when it holds more of the same representation).
    func start(_ request: TransferRequest) {
        assertOnQueue()
        if let intent = job.objectUpload, intent.isBeingCreated {
            abandon(intent)
        } else if let kept = job.objectUpload, !kept.isBeingPut, upload == nil {
            // An upload whose digest state could not be restored starts over.
            restartObject(abandoning: job.objectUpload)
        }
        let committedEnd = parts.committedEnd
        do {
            // Parts fetched out of order since the committed ones may have holes below their
            // end: they are fetched anew.
            if staging.isOutOfOrder { try staging.setLength(committedEnd) }
            // Without an upload, bytes from the start are needed: a file whose parts went to an
            // upload since forgotten starts over.
            if upload == nil, staging.beginsWithHole { try staging.setLength(0) }
            if staging.length < committedEnd { try staging.setLength(committedEnd) }
        } catch {
            return end(TransferResult(failure: .fileError("\(error)"), bytesOnDisk: committedEnd))
        }
        self.request = request
        if connections > 1, committedEnd > 0, let size = job.bytesExpectedFromOrigin, let validator = job.validator,
           !validator.hasPrefix("W/") {
            // Parts of a segmented object go on from the committed ones, each asked for anew.
            return beginWindow(size: size, validator: validator)
        }
        startOrigin(resumingWith: staging.length > 0 ? job.validator : nil, firstPartOnly: connections > 1 && committedEnd == 0)
    }

    /// One request for the rest of the file from the end of the staging file (`validator`: as
    /// If-Range), or with `firstPartOnly` for its first part only.
    private func startOrigin(resumingWith validator: String?, firstPartOnly: Bool) {
        resumedAt = parts.committedEnd
        responseChecked = false
        originResult = nil
        let writeLimit = WriteLimit(parts.committedEnd + stagedParts * partSize) { length in self.queue.async { self.written(length) } }
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

    /// Stops the attempt: the origin's requests at once, upload requests once they answer.
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
            originID = nil
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

    /// A commit was kept: the parts up to `end` leave the disk, and the download may go on (once
    /// `PartUploads` calls `onChange` right after).
    private func committed(upTo end: Int64) {
        guard end > releasedEnd else { return }
        staging.release(releasedEnd..<end)
        releasedEnd = end
        writeLimit?.raise(to: end + stagedParts * partSize)
        window?.committed(upTo: end)
    }

    /// Does the next things there are to do.
    private func pump() {
        guard !ended, !creating, !abandoning else { return }
        let failure = storageFailure ?? parts.failure
        if stopped || failure != nil || windowFailure != nil || (originResult.map { !$0.bodyComplete } ?? false) {
            // Every request still under way ends first (the origin's on its own, or cancelled).
            if failure != nil || windowFailure != nil { stopOrigin() }
            guard parts.isIdle, originID == nil || originResult != nil, window?.fetching.isEmpty ?? true else { return }
            var last = windowFailure ?? originResult ?? TransferResult(failure: .cancelled)
            last.bytesOnDisk = max(parts.committedEnd, window == nil ? last.bytesOnDisk : 0)
            return end(failed(last))
        }
        if let window { return pumpParts(window) }
        let origin = originResult
        let ready = onDisk - parts.hashedEnd
        if let origin, ready == 0 {
            guard parts.isIdle else { return }
            return end(completed(origin))
        }
        if upload == nil {
            guard parts.isIdle else { return }
            // An object of one part at most goes up whole with PutObject, after the checks.
            if origin != nil, parts.hashedEnd == 0, onDisk <= partSize { return parts.hashOnly(0..<onDisk) }
            if ready >= partSize || origin != nil { createUpload() }
            return
        }
        if parts.canTake, ready >= partSize || (origin != nil && ready > 0) {
            parts.send(parts.hashedEnd..<parts.hashedEnd + min(ready, partSize))
        }
    }

    // MARK: - Parts over several connections

    /// `firstPartEnd`: where the first request's bytes end, which hold the first part when it ends there.
    private func beginWindow(size: Int64, validator: String, firstPartEnd: Int64? = nil) {
        do {
            try staging.markOutOfOrder()
        } catch {
            windowFailure = TransferResult(failure: .fileError("\(error)"), bytesOnDisk: parts.committedEnd)
            return pump()
        }
        var window = PartWindow(size: size, partSize: partSize, validator: validator, connections: connections)
        window.committed(upTo: parts.committedEnd)
        if let firstPartEnd, firstPartEnd == window.range(of: 0).upperBound { window.ended(0, complete: true) }
        self.window = window
        logger.info("object goes on over several connections",
                    metadata: ["download.id": "\(job.id)", "connections": "\(connections)", "bytes": "\(parts.committedEnd)"])
        pump()
    }

    private func pumpParts(_ window: PartWindow) {
        if parts.hashedEnd == window.size {
            guard parts.isIdle else { return }
            var whole = TransferResult(httpStatus: 206, bytesOnDisk: window.size, bytesExpected: window.size, validator: window.validator)
            (whole.contentDisposition, whole.effectiveURL) = response
            whole.bodyComplete = true
            return end(completed(whole))
        }
        for index in window.toStart() { fetch(index, of: window) }
        if upload == nil {
            if parts.isIdle { createUpload() }
            return
        }
        let next = window.index(at: parts.hashedEnd)
        if parts.canTake, window.fetched.contains(next) { parts.send(window.range(of: next)) }
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
        onProgress(TransferProgress(bytesOnDisk: parts.committedEnd + window.bytesInWindow,
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
        creating = true
        let (client, mustBeNew) = (client, !job.overwrite && !job.renameOnConflict)
        let fail: @Sendable (ObjectStorageFailure) -> Void = { failure in self.queue.async { self.creationFailed(failure) } }
        ObjectNaming(client: client).choose(for: job, contentDisposition: response.contentDisposition,
                                            effectiveURL: response.effectiveURL) { chosen in
            guard case .success(let key) = chosen else { return fail(chosen.failureValue ?? .exists) }
            self.queue.async {
                let location = self.location(of: key)
                // Kept first: a crash before the answer below is kept leaves an upload to look for.
                self.commit(.creating(key: key)) { kept in
                    guard kept, !self.stopped else { return self.noLongerWriting() }
                    client.createMultipartUpload(location) { created in
                        guard case .success(let uploadID) = created else { return fail(created.failureValue ?? .exists) }
                        let new = ObjectUpload(key: key, uploadID: uploadID)
                        guard mustBeNew else { return self.queue.async { self.created(new) } }
                        // With onConflict: fail, an object already there fails the job now rather than
                        // after the whole download (the final write is conditional all the same).
                        client.objectExists(location) { exists in
                            guard case .success(false) = exists else {
                                self.abort(new)
                                return fail(exists.failureValue ?? .exists)
                            }
                            self.queue.async { self.created(new) }
                        }
                    }
                }
            }
        }
    }

    /// The upload is committed before its first part goes up: a crash from here on finds it to
    /// resume or abort, never an upload nobody knows of.
    private func created(_ new: ObjectUpload) {
        guard !ended else { return abort(new) }
        parts.begin(new)
        commit(new) { kept in
            guard kept else {
                self.abort(new)
                return self.noLongerWriting()
            }
            self.creating = false
            self.pump()
        }
    }

    /// The job is no longer this attempt's to write (cancelled, taken over).
    private func noLongerWriting() {
        creating = false
        stopped = true
        pump()
    }

    private func creationFailed(_ failure: ObjectStorageFailure) {
        creating = false
        storageFailure = failure
        pump()
    }

    /// The object starts over from its first byte: a new representation, or an upload whose
    /// digest state cannot be restored. The old upload is abandoned.
    private func restartObject(abandoning old: ObjectUpload?) {
        releasedEnd = 0
        writeLimit?.raise(to: stagedParts * partSize)
        logger.info("object starts over", metadata: ["download.id": "\(job.id)"])
        if let forgotten = parts.restart() ?? old { abandon(forgotten) }
    }

    /// Aborts an upload the object no longer goes on with — for an intent the last attempt kept
    /// without an answer, what a crash while it was created may have left under its key — and
    /// forgets it in the store only then: a crash before finds it there to abort again. Nothing
    /// goes up meanwhile; a failure to abort ends the attempt as a storage fault.
    private func abandon(_ old: ObjectUpload) {
        abandoning = true
        client.abort(old, in: job.destination.bucket ?? "", of: job.id, logger: logger) { failure in
            self.queue.async { self.abandoned(failure) }
        }
    }

    private func abandoned(_ failure: ObjectStorageFailure?) {
        abandoning = false
        if let failure {
            storageFailure = storageFailure ?? failure
        } else if !ended {
            commit(nil) { kept in if !kept { self.noLongerWriting() } }
        }
        pump()
    }

    /// Aborts an upload this attempt created and will not go on with (best effort: an upload the
    /// store never kept has no one to abort it again).
    private func abort(_ old: ObjectUpload) {
        client.abortMultipartUpload(location(of: old.key), uploadID: old.uploadID) { _ in }
    }

    private func location(of key: String) -> ObjectLocation {
        ObjectLocation(bucket: job.destination.bucket ?? "", key: key)
    }

    // MARK: - Ending

    private func completed(_ origin: TransferResult) -> TransferResult {
        var result = origin
        let digests = parts.digest.finalize()
        result.sha256 = digests.sha256
        result.extraDigest = digests.extra
        return result
    }

    private func failed(_ origin: TransferResult) -> TransferResult {
        var result = origin
        if let failure = storageFailure ?? parts.failure {
            result.failure = .storage(failure)
            // A gone upload is forgotten now (nothing to abort); the settlement starts the object over.
            if failure == .noSuchUpload, parts.restart() != nil { commit(nil) { _ in } }
        }
        result.sha256 = nil
        return result
    }

    private func end(_ result: TransferResult) {
        guard !ended else { return }
        ended = true
        onComplete(result)
    }
}
