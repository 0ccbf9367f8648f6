import Crypto
import Dispatch
import Glibc
import Synchronization

/// The SHA-256 of a file that is being written, computed on a queue of its own by reading back
/// what the writer has written (from the page cache). The writer never waits for the hash, a
/// resumed prefix is hashed while the transfer connects, and nothing is buffered in memory.
///
/// The writer (the engine queue) only publishes how far the file is written and when it starts
/// over; everything else happens on `queue`, which is also where the file descriptor is closed.
final class FileDigest: @unchecked Sendable {
    // @unchecked: `hasher`, `hashed`, `hashedGeneration` and `buffer` are touched only on `queue`;
    // the writer talks to it through the atomics below.
    private let fd: Int32
    private let queue = DispatchQueue(label: "fetchd.transfer.digest", target: .global(qos: .utility))

    /// Bytes of the current generation that are on disk and may be hashed.
    private let written = Atomic<Int64>(0)
    /// Bumped each time the file is truncated to start over.
    private let generation = Atomic<UInt64>(0)
    /// Whether a catch-up pass is already queued.
    private let scheduled = Atomic<Bool>(false)
    /// Set when the digest will never be asked for: stop reading.
    private let abandoned = Atomic<Bool>(false)

    private var hasher = SHA256()
    private var hashed: Int64 = 0
    private var hashedGeneration: UInt64 = 0
    /// Allocated on first use and modest in size: a thousand slow transfers each hold one.
    private lazy var buffer = [UInt8](repeating: 0, count: 128 << 10)

    init(fd: Int32, alreadyWritten: Int64) {
        self.fd = fd
        fileGrew(to: alreadyWritten)
    }

    /// The writer appended: the file is now `length` bytes long.
    func fileGrew(to length: Int64) {
        written.store(length, ordering: .sequentiallyConsistent)
        if !scheduled.exchange(true, ordering: .sequentiallyConsistent) {
            queue.async { self.catchUp() }
        }
    }

    /// The writer truncated the file to start over.
    func startOver() {
        // Order matters: a pass that sees the new generation must not see the old length.
        written.store(0, ordering: .sequentiallyConsistent)
        generation.add(1, ordering: .sequentiallyConsistent)
    }

    /// Hashes whatever is left, fsyncs and closes the file, then calls `completion` on the digest
    /// queue with the lowercase hex digest (nil after a read error) and fsync's errno (0 for
    /// success). The writer must be done with the file.
    func finishAndSync(then completion: @escaping @Sendable (_ hexDigest: String?, _ syncErrno: Int32) -> Void) {
        queue.async {
            let complete = self.catchUp()
            let syncErrno = fsync(self.fd) == 0 ? 0 : errno
            close(self.fd)
            completion(complete ? Self.hex(self.hasher.finalize()) : nil, syncErrno)
        }
    }

    /// Closes the file without finishing the hash. The writer must be done with the file.
    func abandon(then completion: @escaping @Sendable () -> Void) {
        abandoned.store(true, ordering: .sequentiallyConsistent)
        queue.async {
            close(self.fd)
            completion()
        }
    }

    /// Hashes up to the published length; false if reading failed or the digest was abandoned.
    @discardableResult
    private func catchUp() -> Bool {
        scheduled.store(false, ordering: .sequentiallyConsistent)
        while !abandoned.load(ordering: .sequentiallyConsistent) {
            let current = generation.load(ordering: .sequentiallyConsistent)
            if current != hashedGeneration {
                hasher = SHA256()
                hashed = 0
                hashedGeneration = current
            }
            let target = written.load(ordering: .sequentiallyConsistent)
            guard hashed < target else { return true }
            let wanted = Int(min(Int64(buffer.count), target - hashed))
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, wanted, off_t(hashed)) }
            let readError = errno
            // Bytes read across a truncation belong to no generation: drop them.
            guard generation.load(ordering: .sequentiallyConsistent) == hashedGeneration else { continue }
            if count < 0, readError == EINTR { continue }
            guard count > 0 else { return false }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            hashed += Int64(count)
        }
        return false
    }

    private static func hex(_ digest: SHA256.Digest) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
