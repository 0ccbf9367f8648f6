import Dispatch
import DownloadCore
import Logging
import Persistence
import Transfer

/// The attempts of jobs whose destination is an object, for the attempt runner: each starts as an
/// `ObjectTransfer`, whose committed upload the runner's copy of the job follows; once its bytes
/// are in and its digests pass, the object is completed (or, under one part, put whole) with the
/// job's conflict rule, and the settlement says what became of the job. Keeps no state of its own: Sendable as every stored property is a constant; runs
/// on `queue`, the runner's, where the completer is confined.
final class ObjectAttempts: Sendable {
    let queue: DispatchQueue
    private let client: ObjectStorageClient
    private let partSize: Int64
    private let transfers: any TransferRunning
    private let completer: Completer
    private let partials: PartialFiles
    private let logger: Logger

    init(queue: DispatchQueue, client: ObjectStorageClient, partSize: Int64, transfers: any TransferRunning, completer: Completer,
         partials: PartialFiles, logger: Logger) {
        self.queue = queue
        self.client = client
        self.partSize = partSize
        self.transfers = transfers
        self.completer = completer
        self.partials = partials
        self.logger = logger
    }

    /// Starts the attempt of `job` over up to `connections` with the origin `request`; `uploadChanged` gets the upload as
    /// each change of it is handed to the store (the job's settlement must write the same).
    func start(_ job: Download, connections: Int, request: TransferRequest, uploadChanged: @escaping (ObjectUpload?) -> Void,
               onProgress: @escaping (TransferProgress) -> Void, onComplete: @escaping (TransferResult) -> Void) -> ObjectTransfer {
        let completer = completer
        let transfer = ObjectTransfer(
            job: job, connections: connections, extra: request.extraDigest, queue: queue, client: client, partSize: partSize, staging: StagingFile(path: partials.path(job.id)),
            transfers: transfers,
            commit: { upload, then in
                uploadChanged(upload)
                completer.add(JobWrite(changes: [.objectUpload(id: job.id, upload: upload, expecting: [.running])]) { then($0[0]) })
            },
            logger: logger, onProgress: onProgress, onComplete: onComplete)
        transfer.start(request)
        return transfer
    }

    /// Settles an attempt whose bytes are all in: checks its digests, then completes its upload
    /// (or puts the object whole), conditionally unless the job may overwrite; `then` gets the
    /// write, on `queue`.
    func settle(_ settlement: Settlement, upload: ObjectUpload?, then: @escaping @Sendable (JobWrite) -> Void) {
        let job = settlement.job
        guard let bucket = job.destination.bucket else { return then(settlement.settle()) }
        let key = upload?.key ?? ObjectNaming.intendedKey(of: job, contentDisposition: settlement.result.contentDisposition,
                                                          effectiveURL: settlement.result.effectiveURL)
        if let problem = settlement.objectProblem(key: key) { return then(settlement.failing(problem)) }
        if settlement.isWatchedFileAgain(settlement.result.sha256) { return leaveUnchanged(settlement, upload: upload, bucket: bucket, then: then) }
        let finish: @Sendable (String, Result<StoredObject, ObjectStorageFailure>) -> Void = { key, stored in
            self.queue.async {
                switch stored {
                case .success(let object): then(settlement.objectCompleted(key: key, stored: object))
                case .failure(let failure): then(settlement.with { _, result in result.failure = .storage(failure); result.sha256 = nil }.settle())
                }
            }
        }
        if let upload {
            return client.completeMultipartUploadOnce(ObjectLocation(bucket: bucket, key: upload.key), uploadID: upload.uploadID,
                                                      parts: upload.parts, ifNoneMatch: !job.overwrite) { finish(upload.key, $0) }
        }
        let (client, body, sha256) = (client, TransferRequest.FileRange(path: partials.path(job.id), offset: 0, length: settlement.result.bytesOnDisk),
                                      settlement.result.sha256 ?? "")
        let put: @Sendable (String) -> Void = { key in
            client.putObjectOnce(ObjectLocation(bucket: bucket, key: key), body: body, sha256: sha256, ifNoneMatch: !job.overwrite) {
                finish(key, $0)
            }
        }
        if let kept = job.objectUpload, kept.isBeingPut { return put(kept.key) }
        ObjectNaming(client: client).choose(for: job, contentDisposition: settlement.result.contentDisposition,
                                            effectiveURL: settlement.result.effectiveURL) { chosen in
            switch chosen {
            case .failure(let failure): finish(key, .failure(failure))
            case .success(let key) where job.renameOnConflict:
                self.keep(key, of: job) { kept in
                    kept ? put(key) : finish(key, .failure(.unavailable("the job is no longer this node's to write")))
                }
            case .success(let key): put(key)
            }
        }
    }

    /// Keeps the free name a rename chose before the object is put there (`ObjectUpload.putting`);
    /// `then` gets whether the job was still this node's to write.
    private func keep(_ key: String, of job: Download, then: @escaping @Sendable (Bool) -> Void) {
        queue.async {
            self.completer.add(JobWrite(changes: [.objectUpload(id: job.id, upload: .putting(key: key), expecting: [.running])]) { then($0[0]) })
        }
    }

    /// A watch's check that got the very object its watch has: the object is left as it is (no
    /// new version, no `watch.changed`) and the upload of the check's parts aborted, then
    /// forgotten in the check's settlement. An abort that fails leaves the upload kept, for the
    /// next check's attempt to abort before it starts over, or the sweep once the check ends.
    private func leaveUnchanged(_ settlement: Settlement, upload: ObjectUpload?, bucket: String,
                                then: @escaping @Sendable (JobWrite) -> Void) {
        let id = settlement.job.id
        guard let upload else { return then(settlement.unchangedCheck()) }
        client.abort(upload, in: bucket, of: id, logger: logger) { failure in
            self.queue.async {
                var write = settlement.unchangedCheck()
                if failure == nil { write.changes.append(.objectUpload(id: id, upload: nil, expecting: [.queued])) }
                then(write)
            }
        }
    }
}
