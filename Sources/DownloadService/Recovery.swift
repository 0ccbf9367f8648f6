import Crypto
import DownloadCore
import Glibc
import Logging
import Persistence

/// What the start of fetchd does before scheduling: jobs that were running when it stopped go back
/// to the queue (their partial files say how far they got), completions that were placed but not
/// committed are committed (or taken back out, for a job a client paused or cancelled meanwhile),
/// a completed upload's `deleteSource` left undone is done, and partial files no job keeps are
/// removed (a live job's, or a failed one's that a retry can go on from: failing removes the
/// others' before it commits).
struct Recovery {
    let store: any JobStore
    let files: DestinationFiles
    let partials: PartialFiles
    let events: WebhookEvents
    /// What a recovered completion of a watch's check tells its watch.
    let watches: WatchChecks
    let logger: Logger
    /// Where uploads' sources are, for a `deleteSource` a stop left undone; nil where the service
    /// takes no uploads.
    var sources: UploadSources? = nil

    func run(now: Int64) throws {
        try settle(try store.interruptedJobs(), now: now)
        try PartialFiles.removeUnkept(partials, store: store) { job in
            switch job.state {
            // A completed upload that still has its partial file stopped before removing its source.
            case .completed: sources?.removeSent(by: job, logger: logger)
            case .queued, .paused, .cancelled, .failed: unplaceRefused(job)
            // Another node's, in a staging directory the nodes share: its own to settle.
            case .running: break
            }
            return true
        }
    }

    /// A completion placed, then refused at its commit (a client paused or cancelled the job
    /// meanwhile), whose file a stop left where it was placed: taken back out, as the refusal
    /// would have — a cancelled job leaves no file, and a resumed one does not meet its own.
    private func unplaceRefused(_ job: Download) {
        let partialPath = partials.path(job.id)
        let placed = job.upload != nil ? job.upload?.replyDestination : placedPath(job, partialPath: partialPath).map(Destination.init(stored:))
        guard let placed, files.unplace(partial: partialPath, destination: placed) else { return }
        logger.info("a completion placed but not committed taken back out", metadata: ["download.id": "\(job.id)"])
    }

    /// Settles jobs a process left running: placed ones complete, the others go back to the queue
    /// from their partial data. Also for the jobs of a node found dead, taken over while running.
    func settle(_ interrupted: [Download], now: Int64) throws {
        for job in interrupted {
            let partialPath = partials.path(job.id)
            if let path = placedPath(job, partialPath: partialPath), let digest = sha256(ofFile: partialPath) {
                // Its name durable before the completion is committed, as for any finished transfer;
                // until then it stays running (a later start, or a later takeover, tries again).
                if let problem = files.syncDirectory(of: job.destination) {
                    logger.error("placed download not made durable; left running", metadata: ["download.id": "\(job.id)", "error": "\(problem)"])
                    continue
                }
                var done = job
                done.state = .completed
                done.path = path
                done.sha256 = digest
                done.bytesReceived = partials.size(job.id)
                done.finishedAt = now
                if try store.apply(completion(done, now: now))[0] { partials.remove(job.id) }
                logger.info("download completion recovered", metadata: ["download.id": "\(job.id)"])
                continue
            }
            // An upload's reply linked into place before the crash is taken back out: the upload goes
            // again (a plain one cannot go on from where it was) and places the reply it gets then.
            if let reply = job.upload?.replyDestination { files.unplace(partial: partialPath, destination: reply) }
            var queued = job
            queued.state = .queued
            queued.runAt = now
            // Cut by fetchd's own end, not the origin's: not counted against the retry budget.
            queued.outageAttempts += 1
            // A segmented job's partial file has its full size from the start: its ranges say how far it got.
            // An object's committed parts count wherever its partial file is (another node's, taken over).
            // An upload's partial file, if any, is a reply or a tus witness, not data: its saved
            // progress is what the server held, where a file server's next attempt appends.
            queued.bytesReceived = job.upload != nil ? job.bytesReceived
                : job.ranges.isEmpty ? max(partials.size(job.id), job.objectUpload?.end ?? 0)
                : job.ranges.reduce(0) { $0 + $1.next - $1.start }
            _ = try store.update(queued, expecting: [.running])
            logger.info("interrupted download requeued", metadata: ["download.id": "\(job.id)", "bytes": "\(queued.bytesReceived)"])
        }
    }

    /// The write of a recovered completion: the job's own event; or, for a watch's check, what its
    /// settlement would have told its watch — the change, `watch.changed`, the next check.
    private func completion(_ done: Download, now: Int64) -> [StoreChange] {
        let events = events
        guard done.watch != nil else {
            return [.update(done, expecting: [.running], events: events.ended(done, now: now),
                            sessionFinished: { [events.sessionFinished($0, now: now)] })]
        }
        let ending = WatchChecks.Ending(result: .changed, sha256: done.sha256)
        return [.update(done, expecting: [.running])] + [watches.ended(done, ending, now: now)].compactMap { $0 }
    }

    /// Where a completion was placed before fetchd stopped, under the root; nil if it was not.
    /// A named file is looked for under its name, a directory destination's or a renamed one
    /// under any name in its directory.
    private func placedPath(_ job: Download, partialPath: String) -> String? {
        // An object is never placed on disk: its completion is the storage's.
        if job.destination.isObject { return nil }
        guard job.destination.isDirectory || job.renameOnConflict else {
            return files.isPlaced(partial: partialPath, destination: job.destination) ? job.destination.path : nil
        }
        return files.placedName(partial: partialPath, in: job.destination).map(job.destination.pathInDirectory)
    }

    private func sha256(ofFile path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count == 0 { break }
            guard count > 0 else { return nil }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
        }
        return hasher.finalize().withUnsafeBytes(\.hex)
    }
}
