import Confinement
import Dispatch
import DownloadCore
import Logging
import Transfer

/// One attempt of an upload to an `s3://bucket/key` URL. A source of one part at most goes up
/// whole (`PutObject`); a larger one as a multipart upload, created and committed to the store
/// before its first part, each part committed (number, size, ETag) as S3 takes it. An upload the
/// job already has is first checked against `ListParts`: the committed parts S3 still holds are
/// kept, and the source goes on from the end of them (a part S3 lost, and every one after it,
/// goes again); an upload S3 no longer knows is created anew. The source is checked against its
/// pin before each part; each part is hashed just before it goes (S3 checks the body against it).
///
/// It ends like a transfer, with one `TransferResult`: a 200 carrying the object's ETag and
/// version once it is complete, with `bodySHA256`, the digest of the source; otherwise what
/// failed, the storage's failures as `TransferFailure.storage`.
final class BucketUpload: QueueConfined, @unchecked Sendable {  // all mutable state only on `queue` (assertOnQueue)
    /// Persists the upload as it now stands and says whether the job was still this attempt's to
    /// write; called and answered on `queue`.
    typealias Commit = (ObjectUpload, @escaping (Bool) -> Void) -> Void

    let queue: DispatchQueue
    private let job: Download
    private let plan: UploadPlan
    private let location: ObjectLocation
    private let source: SourceFile
    private let client: ObjectStorageClient
    private let partSize: Int64
    private let commit: Commit
    private let logger: Logger
    private let onProgress: (TransferProgress) -> Void
    private let onComplete: (TransferResult) -> Void
    private let hasher: SourceHasher

    private var upload: ObjectUpload?
    private var sentThisAttempt: Int64 = 0
    private var stopped = false
    private var ended = false

    init(job: Download, plan: UploadPlan, location: ObjectLocation, source: SourceFile, client: ObjectStorageClient, partSize: Int64,
         queue: DispatchQueue, commit: @escaping Commit, logger: Logger,
         onProgress: @escaping (TransferProgress) -> Void, onComplete: @escaping (TransferResult) -> Void) {
        self.job = job
        self.plan = plan
        self.location = location
        self.source = source
        self.client = client
        self.partSize = partSize
        self.queue = queue
        self.commit = commit
        self.logger = logger
        self.onProgress = onProgress
        self.onComplete = onComplete
        hasher = SourceHasher(source: source)
    }

    private var size: Int64 { plan.pin.size }
    private var body: TransferRequest.FileRange { TransferRequest.FileRange(path: plan.source.path, offset: 0, length: size, descriptor: source.fd) }

    func start() {
        assertOnQueue()
        if let kept = job.objectUpload, kept.isBeingCreated { return abortUnrecorded(kept) }
        if let kept = job.objectUpload, kept.tusResource == nil, kept.key == location.key { return check(kept) }
        begin()
    }

    private func begin() {
        size <= partSize ? putWhole() : create()
    }

    /// Stops the attempt once the request under way answers (S3's requests are not cut off).
    func cancel() {
        assertOnQueue()
        stopped = true
    }

    // MARK: - Steps

    private func putWhole() {
        hasher.hashPart(upTo: size) { digest in
            self.queue.async {
                guard let digest else { return self.end(Self.unreadable) }
                guard self.goesOn() else { return }
                self.client.putObject(self.location, body: self.body, sha256: digest, ifNoneMatch: false,
                                      contentType: self.plan.contentType) { stored in
                    self.queue.async {
                        if case .success = stored { self.sentThisAttempt = self.size }
                        self.stored(stored, digest: digest)
                    }
                }
            }
        }
    }

    /// The intent to create the upload is kept first, and the upload before its first part: a crash
    /// in between leaves an upload without parts under the key, which the next attempt aborts.
    private func create() {
        commit(.creating(key: location.key)) { kept in
            guard kept else { return self.end(TransferResult(failure: .cancelled)) }
            guard self.goesOn() else { return }
            self.client.createMultipartUpload(self.location, contentType: self.plan.contentType) { created in
                self.queue.async {
                    switch created {
                    case .failure(let failure): self.end(Self.failed(failure))
                    case .success(let uploadID): self.created(ObjectUpload(key: self.location.key, uploadID: uploadID))
                    }
                }
            }
        }
    }

    private func created(_ new: ObjectUpload) {
        logger.info("multipart upload created", metadata: ["download.id": "\(job.id)"])
        commit(new) { kept in
            guard kept else {
                self.client.abortMultipartUpload(self.location, uploadID: new.uploadID) { _ in }
                return self.end(TransferResult(failure: .cancelled))
            }
            self.upload = new
            self.sendPart()
        }
    }

    /// The last attempt kept its intent to create an upload and no answer: the upload it may have
    /// left is aborted before another is created.
    private func abortUnrecorded(_ intent: ObjectUpload) {
        client.abortUnrecordedUploads(ObjectLocation(bucket: location.bucket, key: intent.key), of: job.id, logger: logger) { failure in
            self.queue.async {
                if let failure { return self.end(Self.failed(failure)) }
                self.begin()
            }
        }
    }

    /// Goes on with `kept` as far as S3 still holds its parts.
    private func check(_ kept: ObjectUpload) {
        client.listParts(location, uploadID: kept.uploadID) { listed in
            self.queue.async {
                switch listed {
                case .failure(.noSuchUpload):
                    self.logger.info("multipart upload gone; creating another", metadata: ["download.id": "\(self.job.id)"])
                    self.begin()
                case .failure(let failure): self.end(Self.failed(failure))
                case .success(let parts):
                    let held = Dictionary(parts.map { ($0.number, $0) }, uniquingKeysWith: { first, _ in first })
                    var going = kept
                    going.parts = Array(kept.parts.prefix { held[$0.number] == $0 })
                    if going.parts != kept.parts { self.keep(going) } else { self.upload = going }
                    self.hasher.hash(upTo: going.end)
                    self.sendPart()
                }
            }
        }
    }

    private func sendPart() {
        guard let upload else { return }
        let start = upload.end
        if start == size { return complete(upload) }
        guard goesOn() else { return }
        guard source.pin == plan.pin else { return end(TransferResult(failure: .fileError("the source changed"), bytesOnDisk: start)) }
        let length = min(partSize, size - start)
        let number = upload.parts.count + 1
        hasher.hashPart(upTo: start + length) { digest in
            self.queue.async {
                guard let digest else { return self.end(Self.unreadable) }
                let body = TransferRequest.FileRange(path: self.plan.source.path, offset: start, length: length, descriptor: self.source.fd)
                self.client.uploadPart(self.location, uploadID: upload.uploadID, number: number, body: body, sha256: digest,
                                        bytesPerSecond: self.job.maxBytesPerSecond) { sent in
                    self.queue.async { self.partSent(sent) }
                }
            }
        }
    }

    private func partSent(_ sent: Result<UploadedPart, ObjectStorageFailure>) {
        guard var upload else { return }
        switch sent {
        case .failure(let failure): end(Self.failed(failure))
        case .success(let part):
            upload.parts.append(part)
            sentThisAttempt += part.size
            let last = upload.end == size
            keep(upload) { kept in
                // The completion names only parts the store has: an attempt after a crash that came
                // before the completion was stored finds every part of it.
                guard last else { return }
                if kept { self.sendPart() } else { self.end(TransferResult(failure: .cancelled)) }
            }
            var progress = TransferProgress(bytesOnDisk: upload.end, bytesExpected: size)
            progress.bytesSent = upload.end
            onProgress(progress)
            if !last { sendPart() }
        }
    }

    private func complete(_ upload: ObjectUpload) {
        hasher.finish(at: size) { digest in
            self.queue.async {
                guard let digest else { return self.end(Self.unreadable) }
                guard self.goesOn() else { return }
                self.client.completeMultipartUploadOnce(self.location, uploadID: upload.uploadID, parts: upload.parts, ifNoneMatch: false) {
                    stored in self.queue.async { self.stored(stored, digest: digest) }
                }
            }
        }
    }

    // MARK: - Ending

    private func keep(_ upload: ObjectUpload, then: @escaping (Bool) -> Void = { _ in }) {
        self.upload = upload
        commit(upload, then)
    }

    /// Whether the attempt goes on; a stopped one ends here.
    private func goesOn() -> Bool {
        if stopped { end(TransferResult(failure: .cancelled)) }
        return !stopped
    }

    private func stored(_ stored: Result<StoredObject, ObjectStorageFailure>, digest: String) {
        switch stored {
        case .failure(let failure): end(Self.failed(failure))
        case .success(let object):
            var result = TransferResult(httpStatus: 200)
            result.responseHeaders = [(name: "etag", value: object.etag)] + (object.versionID.map { [(name: "x-amz-version-id", value: $0)] } ?? [])
            result.bodySHA256 = digest
            end(result)
        }
    }

    private static func failed(_ failure: ObjectStorageFailure) -> TransferResult { TransferResult(failure: .storage(failure)) }
    private static let unreadable = TransferResult(failure: .fileError("the source could not be read to hash it"))

    private func end(_ result: TransferResult) {
        guard !ended else { return }
        ended = true
        var ending = result
        ending.bytesOnDisk = upload?.end ?? 0
        ending.bytesSent = sentThisAttempt
        onComplete(ending)
    }
}
