import Crypto
import Glibc

/// A request body read from part of a file as curl sends it (CURLOPT_READFUNCTION), able to start
/// over when curl sends the request again (CURLOPT_SEEKFUNCTION): on a new connection, after a 307
/// or 308. With `hashing`, the SHA-256 of what it sent, anew from each start.
/// Used on the engine queue only, inside curl's callbacks.
final class FileBodyReader {
    private let fd: Int32
    private let range: TransferRequest.FileRange
    /// How far into the range the next read starts.
    private var position: Int64 = 0
    private var hasher: SHA256?

    init(_ range: TransferRequest.FileRange, hashing: Bool = false) throws(TransferFailure) {
        let fd = range.descriptor.map { fcntl($0, F_DUPFD_CLOEXEC, 0) } ?? Glibc.open(range.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileWriter.failure(errno, "open", range.path) }
        self.fd = fd
        self.range = range
        hasher = hashing ? SHA256() : nil
    }

    deinit {
        Glibc.close(fd)
    }

    var length: Int64 { range.length }

    /// Fills `buffer` with the next bytes; 0 at the end of the range. A file shorter than the
    /// range aborts the request (curl then fails it) rather than sending less than announced.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let wanted = Int(min(Int64(buffer.count), range.length - position))
        guard wanted > 0, let base = buffer.baseAddress else { return 0 }
        let count = pread(fd, base, wanted, off_t(range.offset + position))
        guard count > 0 else { return nil }
        position += Int64(count)
        hasher?.update(bufferPointer: UnsafeRawBufferPointer(start: base, count: count))
        return count
    }

    /// Moves to `offset` from the start of the range (curl's rewind before sending again). A
    /// hashing reader goes back to the start only: the digest starts over with the body.
    func seek(to offset: Int64) -> Bool {
        guard (0...range.length).contains(offset) else { return false }
        if hasher != nil {
            guard offset == 0 else { return false }
            hasher = SHA256()
        }
        position = offset
        return true
    }

    /// The SHA-256 of the body sent, once all of it was; nil before, or when not hashing.
    var digest: String? {
        guard position == range.length, let hasher else { return nil }
        return Hex.lowercase(hasher.finalize())
    }
}
