import Confinement
import Dispatch
import DownloadCore
import Logging
import Persistence
import Transfer

/// Aborts the multipart uploads of jobs that ended — cancelled, failed beyond what a retry goes on
/// from, or kept past retention — and terminates their tus resources, and then forgets them, so that
/// no upload is left holding parts in the bucket or bytes on a server, and pruning may delete the job. Sweeps when a job with an upload ends, at start (an
/// upload left by a crash), and with each housekeeping pass. An abort that fails is tried again at
/// the next sweep.
final class UploadSweeper: QueueConfined, @unchecked Sendable {  // `sweepAsked`, `sweeping`, `cleared` only on `queue` (assertOnQueue)
    let queue = DispatchQueue(label: "fetchd.objects.sweeper", target: Upkeep.queue)
    private let store: any JobStore
    private let client: ObjectStorageClient?
    private let tus: TusTermination?
    private let retention: Int64
    private let clock: Clock
    private let logger: Logger
    private var sweepAsked = false
    private var sweeping = false
    /// Uploads aborted and forgotten in the sweep under way.
    private var cleared = 0

    /// Uploads aborted at once in one sweep.
    static let batch = 32

    /// `client`: the object storage's, where one is configured; `tus`: where uploads are taken.
    init(store: any JobStore, client: ObjectStorageClient?, tus: TusTermination? = nil, retention: Duration, clock: Clock, logger: Logger) {
        self.store = store
        self.client = client
        self.tus = tus
        self.retention = retention.wholeMilliseconds
        self.clock = clock
        self.logger = logger
    }

    /// Sweeps soon; asks made while a sweep runs make one more after it.
    func sweep() {
        queue.async {
            self.sweepAsked = true
            self.startIfIdle()
        }
    }

    private func startIfIdle() {
        assertOnQueue()
        guard sweepAsked, !sweeping else { return }
        sweepAsked = false
        let jobs: [Download]
        do {
            jobs = try store.uploadsToAbort(failedBefore: clock.now() - retention, limit: Self.batch)
        } catch {
            return logger.error("cannot read the uploads to abort", metadata: ["error": "\(error)"])
        }
        guard !jobs.isEmpty else { return }
        sweeping = true
        let group = DispatchGroup()
        cleared = 0
        for job in jobs {
            group.enter()
            let started = abort(job) { aborted in
                self.queue.async {
                    if self.aborted(job, aborted) { self.cleared += 1 }
                    group.leave()
                }
            }
            if !started { group.leave() }
        }
        group.notify(queue: queue) {
            self.sweeping = false
            // A full batch may have left more behind it; one that cleared nothing waits for the
            // next ask rather than sending the same aborts again.
            if jobs.count == Self.batch, self.cleared > 0 { self.sweepAsked = true }
            self.startIfIdle()
        }
    }

    /// Asks the server to free the job's upload; false when this node cannot (no storage or no
    /// uploads configured), and `then` is not called.
    private func abort(_ job: Download, then: @escaping @Sendable (Bool) -> Void) -> Bool {
        guard let upload = job.objectUpload else { return false }
        if let resource = upload.tusResource {
            guard let tus else { return false }
            tus.terminate(job, resource: resource, then: then)
            return true
        }
        guard let client, let bucket = job.destination.bucket else { return false }
        client.abort(upload, in: bucket, of: job.id, logger: logger) { failure in then(failure == nil) }
        return true
    }

    /// `write`, after whose commit the sweeper looks for uploads to abort: the job may have ended.
    func sweepingAfter(_ write: JobWrite) -> JobWrite {
        var swept = write
        let committed = write.committed
        swept.committed = { results in
            committed(results)
            self.sweep()
        }
        return swept
    }

    /// Whether the job's upload is aborted and forgotten.
    private func aborted(_ job: Download, _ aborted: Bool) -> Bool {
        assertOnQueue()
        guard aborted else {
            logger.warning("cannot abort an upload yet; tried again later", metadata: ["download.id": "\(job.id)"])
            return false
        }
        do {
            let forgotten = try store.apply([.objectUpload(id: job.id, upload: nil, expecting: [.completed, .cancelled, .failed])])
            logger.info("upload aborted", metadata: ["download.id": "\(job.id)"])
            return forgotten.first == true
        } catch {
            logger.error("cannot forget an aborted upload; tried again later", metadata: ["download.id": "\(job.id)", "error": "\(error)"])
            return false
        }
    }
}
