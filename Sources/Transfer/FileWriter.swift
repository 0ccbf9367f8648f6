import Confinement
import Dispatch
import Glibc
import Synchronization

/// The disk side of a `FileSink`: on a queue of its own, writes the sink's chunks in order, passes
/// each to the `FileDigest` (hashing on its own queue), starts write-back every few MiB
/// (`WriteBack`), and at the end fsyncs the file (while the last chunks are hashed) and closes it.
///
/// The engine queue never waits for it: it hands chunks over with `write`, and while `isBehind`
/// says the disk side is too far behind it takes no more bytes until `onWritable` runs.
final class FileWriter: QueueConfined, @unchecked Sendable {
    // @unchecked: `written`, `writeBackFrom` and `digestIdle` are touched only on `queue` (assertOnQueue); what
    // other queues read is in `shared`, a Mutex.

    private struct Shared {
        /// The file's length as written so far.
        var written: Int64
        /// The first error writing, truncating or syncing; nothing is written after it.
        var failure: TransferFailure?
        /// Made when write-back first starts, a step into the file: a small file has none (nor its queue).
        var writeBack: WriteBack?
    }

    private let fd: Int32
    private let path: String
    private let backlog: WriteBacklog
    /// Nil for a segment of a segmented download, whose digest is computed over the finished file.
    private let digest: FileDigest?
    /// Told how far the file is written (`WriteLimit.written`).
    private let writeLimit: WriteLimit?
    let queue = DispatchQueue(label: "fetchd.transfer.file", target: .global(qos: .utility))
    private let shared: Mutex<Shared>

    private var written: Int64
    /// Where the range not yet handed to write-back starts.
    private var writeBackFrom: Int64
    /// The digest has been given nothing to do yet (no resumed prefix, no chunk, no restart), so
    /// its queue is idle and `finish` may hash the last chunk synchronously.
    private var digestIdle: Bool

    /// Takes over `fd`, whose first `length` bytes are there already (a resumed prefix).
    /// `onWritable` runs, on some other queue, when the sink may take bytes again after `isBehind`.
    init(fd: Int32, path: String, length: Int64, hashing: Bool, extraDigest: DigestAlgorithm?, staging: WriteStaging,
         writeLimit: WriteLimit? = nil, onWritable: @escaping @Sendable () -> Void) {
        self.writeLimit = writeLimit
        self.fd = fd
        self.path = path
        backlog = WriteBacklog(limit: staging.backlogLimit(hashing: hashing), pool: staging.pool, onShrunk: onWritable)
        digest = hashing ? FileDigest(fd: fd, alreadyWritten: length, extra: extraDigest, backlog: backlog, pool: staging.pool) : nil
        shared = Mutex(Shared(written: length))
        written = length
        writeBackFrom = length
        digestIdle = length == 0
    }

    /// Whether written ranges leave the page cache once on disk (`WriteBack`): a file hashed as it
    /// is written is not read back; one that is not (a segment's, an object's staged part) is read
    /// once complete.
    var dropsWrittenPages: Bool { digest != nil }

    /// The first error writing the file, if one happened.
    var failure: TransferFailure? { shared.withLock { $0.failure } }

    /// The file's length as written so far (chunks handed over may still be on their way).
    var bytesWritten: Int64 { shared.withLock { $0.written } }

    /// Whether the disk side is too far behind to be handed more; if so, `onWritable` runs once it
    /// has caught up.
    func isBehind() -> Bool {
        backlog.isFull()
    }

    /// Writes `chunk` at its offset.
    func write(_ chunk: WriteChunk) {
        backlog.add()
        queue.async { self.store(chunk) }
    }

    /// Empties the file, after the chunks handed over before.
    func startOver() {
        queue.async {
            guard self.failure == nil else { return }
            guard ftruncate(self.fd, 0) == 0 else { return self.fail(errno, "truncate") }
            self.written = 0
            self.writeBackFrom = 0
            self.shared.withLock { $0.written = 0 }
            self.digestIdle = false
            self.digest?.startOver()
        }
    }

    /// What `finish` reports: the file's length and its digests, or what went wrong.
    typealias Finished = @Sendable (_ length: Int64, _ digests: Result<FileDigests?, TransferFailure>) -> Void

    /// Writes what was handed over and then `last`, fsyncs and closes the file; `completion` gets
    /// the file's length and its digests (or what went wrong), on some other queue. All in one turn
    /// of the writer's queue: a body that is all in `last` (a small file) is hashed right here,
    /// without waking the digest's queue.
    func finish(last: WriteChunk?, then completion: @escaping Finished) {
        if last != nil { backlog.add() }
        queue.async {
            var unhashed: WriteChunk?
            if let last {
                if self.digestIdle, self.failure == nil, self.writeAll(last) {
                    self.shared.withLock { $0.written = self.written }
                    unhashed = last
                } else {
                    self.store(last)
                }
            }
            let (length, hashNow) = (self.written, unhashed)
            SyncQueues.run { self.sync(length: length, unhashed: hashNow, then: completion) }
        }
    }

    /// The end of `finish`, after the last write: fsyncs, hashes what is left and closes the file.
    /// Nothing touches `queue`'s state from here on.
    private func sync(length: Int64, unhashed: WriteChunk?, then completion: @escaping Finished) {
        if failure == nil, fsync(fd) != 0 { fail(errno, "fsync") }
        if let failure {
            if let unhashed { backlog.giveBack(unhashed) }
            return stopDigest {
                self.close()
                completion(length, .failure(failure))
            }
        }
        guard let digest else {
            if let unhashed { backlog.giveBack(unhashed) }
            close()
            return completion(length, .success(nil))
        }
        let path = self.path
        let done: @Sendable (FileDigests?) -> Void = { digests in
            self.close()
            completion(length, digests.map { .success($0) } ?? .failure(.fileError("reading \(path) back to hash it failed")))
        }
        guard let unhashed else { return digest.finish(then: done) }
        done(digest.finishNow(adding: unhashed))
    }

    /// Writes what was handed over and closes the file; `completion` gets its length, on some other queue.
    func abandon(then completion: @escaping @Sendable (_ length: Int64) -> Void) {
        queue.async {
            let length = self.written
            self.stopDigest {
                self.close()
                completion(length)
            }
        }
    }

    /// `then` runs once the digest no longer reads the file.
    private func stopDigest(then: @escaping @Sendable () -> Void) {
        guard let digest else { return then() }
        digest.stop(then: then)
    }

    static func failure(_ code: Int32, _ action: String, _ path: String) -> TransferFailure {
        if code == ENOSPC || code == EDQUOT { return .diskFull }
        return .fileError("\(action) \(path): \(String(cString: strerror(code)))")
    }

    // MARK: - On the queue

    private func store(_ chunk: WriteChunk) {
        assertOnQueue()
        guard failure == nil, writeAll(chunk) else { return backlog.giveBack(chunk) }
        shared.withLock { $0.written = written }
        writeLimit?.written(written)
        digestIdle = false
        if let digest { digest.add(chunk) } else { backlog.giveBack(chunk) }
        if written - writeBackFrom >= WriteBack.step {
            startWriteBack(upTo: written)
            writeBackFrom = written
        }
    }

    private func startWriteBack(upTo end: Int64) {
        assertOnQueue()
        let writeBack = shared.withLock { state in
            if let made = state.writeBack { return made }
            let made = WriteBack(fd: fd, dropsWritten: dropsWrittenPages)
            state.writeBack = made
            return made
        }
        writeBack.start(from: writeBackFrom, upTo: end)
    }

    /// Writes the whole chunk, retrying short writes; false (with the failure recorded) on an error.
    private func writeAll(_ chunk: WriteChunk) -> Bool {
        assertOnQueue()
        let bytes = chunk.bytes
        var done = 0
        while done < bytes.count {
            let count = pwrite(fd, bytes.baseAddress?.advanced(by: done), bytes.count - done, off_t(chunk.offset) + off_t(done))
            if count < 0 {
                if errno == EINTR { continue }
                fail(errno, "write")
                return false
            }
            // pwrite returns 0 only for a zero-length request, which the loop never makes.
            done += count
            written = chunk.offset + Int64(done)
        }
        return true
    }

    private func fail(_ code: Int32, _ action: String) {
        let failure = Self.failure(code, action, path)
        shared.withLock { state in
            if state.failure == nil { state.failure = failure }
        }
    }

    /// Once neither the writer nor the digest uses the file any more.
    private func close() {
        shared.withLock { $0.writeBack }?.drain()
        Glibc.close(fd)
    }
}
