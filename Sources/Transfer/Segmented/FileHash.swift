import Crypto
import Glibc

/// The digests of a finished file, read front to back: for a segmented download, whose ranges
/// arrive out of order, so that hashing while writing (`FileDigest`) cannot follow them.
enum FileHash {
    static let blockSize = 1 << 20

    /// SHA-256 and, when asked, `extra`; what went wrong otherwise. Blocking: call it off the
    /// engine queue.
    static func digests(ofFileAt path: String, extra: DigestAlgorithm?) -> Result<FileDigests, TransferFailure> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(FileWriter.failure(errno, "open", path)) }
        defer { close(fd) }
        var sha256 = SHA256()
        var extraHasher = ExtraHasher(extra)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 64)
        defer { buffer.deallocate() }
        while true {
            let count = read(fd, buffer.baseAddress, blockSize)
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(FileWriter.failure(errno, "read", path))
            }
            if count == 0 { break }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
            sha256.update(bufferPointer: bytes)
            extraHasher?.update(bytes)
        }
        return .success(FileDigests(sha256: Hex.lowercase(sha256.finalize()), extra: extraHasher?.finalize()))
    }

    /// Makes the file `size` bytes long with its blocks allocated (posix_fallocate), so that ranges
    /// written out of order neither fragment it nor run out of space half way; what is there
    /// already is kept.
    static func preallocate(_ path: String, size: Int64) -> TransferFailure? {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return FileWriter.failure(errno, "open", path) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { return FileWriter.failure(errno, "stat", path) }
        // A longer file (left by another representation) would carry stale bytes past the end.
        if Int64(status.st_size) > size, ftruncate(fd, off_t(size)) != 0 {
            return FileWriter.failure(errno, "truncate", path)
        }
        guard size > 0 else { return nil }
        // posix_fallocate returns the error rather than setting errno.
        let code = posix_fallocate(fd, 0, off_t(size))
        return code == 0 ? nil : FileWriter.failure(code, "preallocate", path)
    }
}
