import Confinement
import Crypto
import Dispatch
import DownloadCore
import Glibc

/// The SHA-256 (and, when asked, one more digest: `DigestAlgorithm`) of a file being written front to back, computed on a queue of its own from the
/// chunks its `FileWriter` has written, so that hashing runs beside receiving and writing rather
/// than after them (SHA-256 is about as much CPU work as the rest of a download together).
///
/// What the hash lags behind — a resumed prefix already on disk, and whatever is written while
/// that is being hashed — is read back from the file (the page cache, usually), one chunk per turn
/// of the queue so that the chunks in between are given back to the writer meanwhile.
final class FileDigest: QueueConfined, @unchecked Sendable {
    // @unchecked: `hasher`, `extraHasher`, `hashed`, `written`, `isReadingBack` and `isDone` are touched only on
    // `queue` (assertOnQueue).
    private let fd: Int32
    private let backlog: WriteBacklog
    private let pool: ChunkPool
    let queue = DispatchQueue(label: "fetchd.transfer.digest", target: .global(qos: .utility))

    private let extraAlgorithm: DigestAlgorithm?
    private var hasher = SHA256()
    /// Nil unless the request asked for another algorithm, so that the usual case pays nothing more.
    private var extraHasher: ExtraHasher?
    /// Bytes hashed, from the start of the file.
    private var hashed: Int64 = 0
    /// The file's length as written, as far as the digest has heard: all of it may be read back.
    private var written: Int64
    /// Whether a read-back step is queued.
    private var isReadingBack = false
    /// Set by `finish` or `stop`: the file may be closed from then on.
    private var isDone = false

    /// `fd`'s first `alreadyWritten` bytes are there already and are read back.
    init(fd: Int32, alreadyWritten: Int64, extra: DigestAlgorithm?, backlog: WriteBacklog, pool: ChunkPool) {
        self.fd = fd
        extraAlgorithm = extra
        extraHasher = ExtraHasher(extra)
        self.backlog = backlog
        self.pool = pool
        written = alreadyWritten
        if alreadyWritten > 0 { queue.async { self.readBackIfBehind() } }
    }

    /// `chunk` is written to the file: hashes it and gives it back to the backlog.
    func add(_ chunk: WriteChunk) {
        queue.async {
            if !self.isDone {
                self.written = chunk.offset + Int64(chunk.count)
                if chunk.offset == self.hashed {
                    self.update(chunk.bytes)
                }
                self.readBackIfBehind()
            }
            self.backlog.giveBack(chunk)
        }
    }

    /// The file was emptied (after the chunks added before).
    func startOver() {
        queue.async {
            self.hasher = SHA256()
            self.extraHasher = ExtraHasher(self.extraAlgorithm)
            self.hashed = 0
            self.written = 0
        }
    }

    /// Hashes whatever is left, then calls `completion` on the digest's queue with the digests,
    /// or nil if reading the file back failed. Nothing may be added afterwards.
    func finish(then completion: @escaping @Sendable (_ digests: FileDigests?) -> Void) {
        queue.async {
            self.isDone = true
            while self.hashed < self.written {
                guard self.readBack() else { return completion(nil) }
            }
            completion(FileDigests(sha256: self.hasher.finalize().withUnsafeBytes(\.hex), extra: self.extraHasher?.finalize()))
        }
    }

    /// Hashes `chunk`, the file's bytes from where the hash stands, gives it back, and returns the
    /// digests, on the caller's thread (the digest's queue must be idle: nothing added before).
    func finishNow(adding chunk: WriteChunk) -> FileDigests? {
        defer { backlog.giveBack(chunk) }
        return queue.sync {
            isDone = true
            written = chunk.offset + Int64(chunk.count)
            if chunk.offset == hashed { update(chunk.bytes) }
            while hashed < written {
                guard readBack() else { return nil }
            }
            return FileDigests(sha256: hasher.finalize().withUnsafeBytes(\.hex), extra: extraHasher?.finalize())
        }
    }

    /// Stops hashing; `completion` runs on the digest's queue once the file is no longer read.
    func stop(then completion: @escaping @Sendable () -> Void) {
        queue.async {
            self.isDone = true
            completion()
        }
    }

    /// Queues a read-back step if the hash lags behind. A read error stops the steps: `finish`
    /// tries again and reports it.
    private func readBackIfBehind() {
        assertOnQueue()
        guard !isReadingBack, hashed < written else { return }
        isReadingBack = true
        queue.async {
            self.isReadingBack = false
            guard !self.isDone, self.readBack() else { return }
            self.readBackIfBehind()
        }
    }

    /// Hashes the next bytes, up to a chunk's worth, read back from the file; false if reading failed.
    private func readBack() -> Bool {
        assertOnQueue()
        let offset = hashed
        let wanted = Int(min(Int64(WriteChunk.capacity), written - offset))
        let chunk = pool.take(at: offset)
        defer { pool.giveBack(chunk) }
        var count: Int
        repeat {
            count = chunk.refill(upTo: wanted) { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
        } while count < 0 && errno == EINTR
        guard count > 0 else { return false }
        update(chunk.bytes)
        return true
    }

    /// The next bytes of the file, in order.
    private func update(_ bytes: UnsafeRawBufferPointer) {
        assertOnQueue()
        hasher.update(bufferPointer: bytes)
        extraHasher?.update(bytes)
        hashed += Int64(bytes.count)
    }
}

/// A finished file's digests, lowercase hex.
struct FileDigests: Sendable {
    var sha256: String
    /// The request's `extraDigest`, when it named one.
    var extra: String?
}
