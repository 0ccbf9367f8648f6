import Glibc

/// The file one attempt writes to, as the engine queue sees it: opened when the attempt starts,
/// body bytes collected into chunks (`WriteStaging`) and handed to a `FileWriter`, which writes,
/// hashes and at the end syncs and closes the file on its own queue.
/// Used on the engine queue only.
final class FileSink {
    private let writer: FileWriter
    private let staging: WriteStaging
    /// The chunk being filled, not yet handed to the writer.
    private var chunk: WriteChunk?
    /// The last chunk was filled up: the transfer is fast enough for a large one (`WriteChunk`).
    private var takesLargeChunks = false
    /// The file's length once everything taken so far is written: where the next byte goes.
    private(set) var length: Int64
    private let writeLimit: WriteLimit?
    private let onWritable: @Sendable () -> Void

    /// Opens the file, creating it. `keepExisting` keeps what is there (to resume after it);
    /// otherwise the file is emptied. With `segmentFrom`, the sink writes one byte range of a
    /// segmented download from that offset on, keeps the rest of the file as it is, and computes
    /// no digest (`SegmentedDownload` hashes the finished file). `onWritable` runs (on some other
    /// queue) when the sink takes bytes again after `mustWait`.
    /// `writeLimit`: how far the file may grow before the sink waits for the limit to be raised.
    /// `hashing: false` computes no digest (the caller hashes the bytes its own way).
    init(path: String, keepExisting: Bool, extraDigest: DigestAlgorithm?, segmentFrom: Int64? = nil, hashing: Bool = true,
         writeLimit: WriteLimit? = nil, staging: WriteStaging, onWritable: @escaping @Sendable () -> Void) throws(TransferFailure) {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileWriter.failure(errno, "open", path) }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            let error = FileWriter.failure(errno, "stat", path)
            Glibc.close(fd)
            throw error
        }
        if !keepExisting, segmentFrom == nil, status.st_size > 0, ftruncate(fd, 0) != 0 {
            let error = FileWriter.failure(errno, "truncate", path)
            Glibc.close(fd)
            throw error
        }
        length = segmentFrom ?? (keepExisting ? Int64(status.st_size) : 0)
        self.staging = staging
        self.writeLimit = writeLimit
        self.onWritable = onWritable
        writer = FileWriter(fd: fd, path: path, length: length, hashing: hashing && segmentFrom == nil, extraDigest: extraDigest,
                            staging: staging, writeLimit: writeLimit, onWritable: onWritable)
    }

    /// What is on disk (in the page cache) so far, for progress reports.
    var bytesWritten: Int64 { writer.bytesWritten }

    /// Whether the writer is too far behind to take `count` more bytes now; if so, `onWritable`
    /// runs once it has caught up. Bytes that fit the chunk being filled are always welcome.
    func mustWait(toTake count: Int) -> Bool {
        if let writeLimit, !writeLimit.admits(length + Int64(count), orCall: onWritable) {
            // What it holds goes to disk now: the owner raises the limit once it has read those bytes.
            flush()
            return true
        }
        if let chunk, chunk.capacity - chunk.count >= count { return false }
        return writer.isBehind()
    }

    /// Empties the file, for a response that replaces it from the first byte. A failure to truncate
    /// shows at the next write or at the end.
    func startOver() {
        guard length > 0 else { return }
        flush()
        length = 0
        writer.startOver()
    }

    /// Takes all of `bytes`, to be written at the end of the file; fails if an earlier write did.
    func write(_ bytes: UnsafeRawBufferPointer) throws(TransferFailure) {
        var rest = bytes
        while !rest.isEmpty {
            let chunk = try fillingChunk()
            let taken = chunk.append(rest)
            rest = UnsafeRawBufferPointer(rebasing: rest[taken...])
            length += Int64(taken)
            if chunk.isFull { flush() }
        }
    }

    /// Hands the chunk being filled to the writer.
    func flush() {
        guard let chunk else { return }
        self.chunk = nil
        takesLargeChunks = chunk.isFull
        writer.write(chunk)
    }

    /// Writes what is left, finishes the hash, fsyncs and closes the file, off the engine queue;
    /// `completion` gets the file's length and its digests (none for a segment), or what went
    /// wrong, on some other queue.
    func finish(then completion: @escaping @Sendable (_ length: Int64, _ digests: Result<FileDigests?, TransferFailure>) -> Void) {
        let last = chunk
        chunk = nil
        writer.finish(last: last, then: completion)
    }

    /// Writes what is left and closes the file, off the engine queue; `completion` gets the file's
    /// length once it is closed, on some other queue.
    func abandon(then completion: @escaping @Sendable (_ length: Int64) -> Void) {
        flush()
        writer.abandon(then: completion)
    }

    private func fillingChunk() throws(TransferFailure) -> WriteChunk {
        if let chunk { return chunk }
        if let failure = writer.failure { throw failure }
        let chunk = staging.chunk(for: self, at: length, large: takesLargeChunks)
        self.chunk = chunk
        return chunk
    }
}
