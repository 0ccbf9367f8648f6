import Confinement
import Crypto
import Dispatch
import DownloadCore
import Glibc

/// The digests of a segmented download's file, read front to back: its ranges arrive out of order,
/// so hashing while writing (`FileDigest`) cannot follow them. Instead the hasher follows the
/// file's contiguous prefix as the ranges fill it (`advance(to:)`), reading those bytes back (from
/// the page cache, as a rule) on its own queue while the download goes on, so that once the last
/// range is in only what came since is left to hash. After a restart it starts again from byte 0.
final class FileHash: QueueConfined, @unchecked Sendable {  // the hash state only on `queue` (assertOnQueue)
    static let blockSize = 1 << 20

    let queue = DispatchQueue(label: "fetchd.segment-hash", qos: .utility)
    private let path: String
    private var fd: Int32 = -1
    private var sha256 = SHA256()
    private var extra: ExtraHasher?
    /// Bytes hashed so far (on `queue`), and the first failure to read.
    private var hashed: Int64 = 0
    private var failure: TransferFailure?

    init(path: String, extra: DigestAlgorithm?) {
        self.path = path
        self.extra = ExtraHasher(extra)
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// The file's first `end` bytes are written: hash what of them is not hashed yet, in the background.
    func advance(to end: Int64) {
        queue.async { self.hash(upTo: end) }
    }

    /// The whole file (`size` bytes) is written: the digests once the rest is hashed, on a utility queue.
    func finish(size: Int64, completion: @escaping @Sendable (Result<FileDigests, TransferFailure>) -> Void) {
        queue.async {
            self.hash(upTo: size)
            completion(self.digests())
        }
    }

    /// The digests of the whole file at `path`, read now (blocking: call it off the engine's queue).
    static func digests(ofFileAt path: String, extra: DigestAlgorithm?) -> Result<FileDigests, TransferFailure> {
        var status = stat()
        guard stat(path, &status) == 0 else { return .failure(FileWriter.failure(errno, "stat", path)) }
        let hasher = FileHash(path: path, extra: extra)
        return hasher.queue.sync {
            hasher.hash(upTo: Int64(status.st_size))
            return hasher.digests()
        }
    }

    private func digests() -> Result<FileDigests, TransferFailure> {
        assertOnQueue()
        if let failure { return .failure(failure) }
        return .success(FileDigests(sha256: sha256.finalize().withUnsafeBytes(\.hex), extra: extra?.finalize()))
    }

    private func hash(upTo end: Int64) {
        assertOnQueue()
        guard failure == nil, hashed < end else { return }
        if fd < 0 {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return failure = FileWriter.failure(errno, "open", path) }
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.blockSize, alignment: 64)
        defer { buffer.deallocate() }
        while hashed < end {
            let count = pread(fd, buffer.baseAddress, Int(min(Int64(Self.blockSize), end - hashed)), off_t(hashed))
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                // The file is shorter than its ranges say: a read error, or it was cut meanwhile.
                return failure = count < 0 ? FileWriter.failure(errno, "read", path) : .fileError("\(path) ends at byte \(hashed)")
            }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
            sha256.update(bufferPointer: bytes)
            extra?.update(bytes)
            hashed += Int64(count)
        }
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
