import Glibc

/// A request body read from part of a file as curl sends it (CURLOPT_READFUNCTION), able to start
/// over when curl sends the request again (CURLOPT_SEEKFUNCTION): on a new connection, after a 307
/// or 308. Used on the engine queue only, inside curl's callbacks.
final class FileBodyReader {
    private let fd: Int32
    private let range: TransferRequest.FileRange
    /// How far into the range the next read starts.
    private var position: Int64 = 0
    /// With `range.hashed`: the SHA-256 of the range up to `hashedTo`, the furthest any read
    /// reached. Bytes read again after a rewind are the same bytes and are not hashed twice.
    private var digest: ResumableDigest?
    private var hashedTo: Int64 = 0

    init(_ range: TransferRequest.FileRange) throws(TransferFailure) {
        let fd = range.descriptor.map { fcntl($0, F_DUPFD_CLOEXEC, 0) } ?? Glibc.open(range.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileWriter.failure(errno, "open", range.path) }
        self.fd = fd
        self.range = range
        if range.hashed { digest = ResumableDigest(extra: nil) }
    }

    deinit {
        Glibc.close(fd)
    }

    var length: Int64 { range.length }

    /// With `range.hashed`, once every byte of the range was read: its SHA-256, lowercase hex.
    var sha256: String? {
        hashedTo == range.length ? digest?.finalize().sha256 : nil
    }

    /// Fills `buffer` with the next bytes; 0 at the end of the range. A file shorter than the
    /// range aborts the request (curl then fails it) rather than sending less than announced.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let wanted = Int(min(Int64(buffer.count), range.length - position))
        guard wanted > 0, let base = buffer.baseAddress else { return 0 }
        let count = pread(fd, base, wanted, off_t(range.offset + position))
        guard count > 0 else { return nil }
        let end = position + Int64(count)
        if digest != nil, end > hashedTo {
            // `seek(to:)` keeps `position` at or before `hashedTo`, so the new bytes are the tail.
            let fresh = Int(end - hashedTo)
            digest?.update(UnsafeRawBufferPointer(start: base + (count - fresh), count: fresh))
            hashedTo = end
        }
        position = end
        return count
    }

    /// Moves to `offset` from the start of the range (curl's rewind before sending again). A
    /// hashed range refuses to skip bytes it has not hashed: curl then reads up to `offset`
    /// instead (CURL_SEEKFUNC_CANTSEEK).
    func seek(to offset: Int64) -> Bool {
        guard (0...range.length).contains(offset), digest == nil || offset <= hashedTo else { return false }
        position = offset
        return true
    }
}
