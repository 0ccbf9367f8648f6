import Glibc

/// The file one attempt writes to: opened when the attempt starts, appended to with pwrite,
/// hashed alongside by a `FileDigest`, and synced and closed when the attempt ends.
/// Used on the engine queue only, until `finish` or `abandon` hands the descriptor to the digest queue.
final class FileSink {
    private let path: String
    private let fd: Int32
    private let digest: FileDigest
    /// The file's length, which is where the next byte goes.
    private(set) var length: Int64

    /// Opens the file, creating it. `keepExisting` keeps what is there (to resume after it);
    /// otherwise the file is emptied.
    init(path: String, keepExisting: Bool) throws(TransferFailure) {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Self.failure(errno, "open", path) }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            let error = Self.failure(errno, "stat", path)
            Glibc.close(fd)
            throw error
        }
        if !keepExisting, status.st_size > 0, ftruncate(fd, 0) != 0 {
            let error = Self.failure(errno, "truncate", path)
            Glibc.close(fd)
            throw error
        }
        self.path = path
        self.fd = fd
        length = keepExisting ? Int64(status.st_size) : 0
        digest = FileDigest(fd: fd, alreadyWritten: length)
    }

    /// Empties the file, for a response that replaces it from the first byte.
    func startOver() throws(TransferFailure) {
        guard length > 0 else { return }
        guard ftruncate(fd, 0) == 0 else { throw Self.failure(errno, "truncate", path) }
        length = 0
        digest.startOver()
    }

    /// Appends all of `bytes`, retrying short writes.
    func write(_ bytes: UnsafeRawBufferPointer) throws(TransferFailure) {
        var done = 0
        while done < bytes.count {
            let count = pwrite(fd, bytes.baseAddress?.advanced(by: done), bytes.count - done, off_t(length))
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.failure(errno, "write", path)
            }
            // pwrite returns 0 only for a zero-length request, which the loop never makes.
            done += count
            length += Int64(count)
        }
        digest.fileGrew(to: length)
    }

    /// Finishes the hash, fsyncs and closes the file, off the engine queue; `completion` gets the
    /// lowercase hex SHA-256 of the whole file, and runs on the digest queue.
    func finish(completion: @escaping @Sendable (Result<String, TransferFailure>) -> Void) {
        let path = path
        digest.finishAndSync { hexDigest, syncErrno in
            if syncErrno != 0 {
                completion(.failure(Self.failure(syncErrno, "fsync", path)))
            } else if let hexDigest {
                completion(.success(hexDigest))
            } else {
                completion(.failure(.fileError("reading \(path) back to hash it failed")))
            }
        }
    }

    /// Closes the file as it is, off the engine queue; `completion` runs once it is closed.
    func abandon(then completion: @escaping @Sendable () -> Void) {
        digest.abandon(then: completion)
    }

    private static func failure(_ code: Int32, _ action: String, _ path: String) -> TransferFailure {
        if code == ENOSPC || code == EDQUOT { return .diskFull }
        return .fileError("\(action) \(path): \(String(cString: strerror(code)))")
    }
}
