import Confinement
import Dispatch
import Glibc
import Transfer

/// The SHA-256 of an upload's source sent in several requests (tus chunks, S3 parts), read from
/// the descriptor the upload holds, in order, on a queue of its own: a stretch is hashed while it
/// goes out, so hashing adds no time to the upload. After a resume, the stretch the server holds
/// already is read once more (what was sent before the fault is the same pinned file).
final class SourceHasher: QueueConfined, @unchecked Sendable {  // `digest`, `hashedTo`, `unreadable` only on `queue` (assertOnQueue)
    let queue = DispatchQueue(label: "fetchd.uploads.hash", qos: .utility)
    private let source: SourceFile
    private var digest: ResumableDigest
    private var hashedTo: Int64 = 0
    private var unreadable = false

    /// Bytes read at once.
    static let blockSize = 1 << 20

    /// `extra`: an algorithm to compute beside SHA-256 (a `checksum`'s); `start`: where hashing
    /// begins (a stretch of the source on its own: a tus chunk's `Upload-Checksum`).
    init(source: SourceFile, extra: DigestAlgorithm? = nil, from start: Int64 = 0) {
        self.source = source
        digest = ResumableDigest(extra: extra)
        hashedTo = start
    }

    /// Hashes the source up to `end` (from where the last call ended), behind the calls before.
    func hash(upTo end: Int64) {
        queue.async {
            guard end > self.hashedTo, !self.unreadable else { return }
            self.read(upTo: end)
        }
    }

    /// Hashes the source up to `end` as `hash(upTo:)` does, and gives that stretch's own digest
    /// (an S3 part's `x-amz-content-sha256`); nil when the source could not be read.
    func hashPart(upTo end: Int64, _ then: @escaping @Sendable (String?) -> Void) {
        queue.async {
            guard end > self.hashedTo, !self.unreadable else { return then(nil) }
            var part: ResumableDigest? = ResumableDigest(extra: nil)
            self.read(upTo: end, alsoInto: &part)
            then(self.unreadable ? nil : part?.finalize().sha256)
        }
    }

    /// The digest of the source up to `end`, once every stretch before is hashed; nil when the
    /// source could not be read or was hashed to elsewhere.
    func finish(at end: Int64, _ then: @escaping @Sendable (String?) -> Void) {
        digests(at: end) { then($0?.sha256) }
    }

    /// `finish`'s, with the `extra` algorithm's digest beside it.
    func digests(at end: Int64, _ then: @escaping @Sendable ((sha256: String, extra: String?)?) -> Void) {
        queue.async {
            if end > self.hashedTo, !self.unreadable { self.read(upTo: end) }
            then(self.unreadable || self.hashedTo != end ? nil : self.digest.finalize())
        }
    }

    private func read(upTo end: Int64) {
        var none: ResumableDigest?
        read(upTo: end, alsoInto: &none)
    }

    private func read(upTo end: Int64, alsoInto part: inout ResumableDigest?) {
        assertOnQueue()
        var buffer = [UInt8](repeating: 0, count: Self.blockSize)
        while hashedTo < end {
            let wanted = Int(min(Int64(Self.blockSize), end - hashedTo))
            let count = buffer.withUnsafeMutableBytes { pread(source.fd, $0.baseAddress, wanted, off_t(hashedTo)) }
            guard count > 0 else {
                unreadable = true
                return
            }
            buffer.withUnsafeBytes { bytes in
                let block = UnsafeRawBufferPointer(rebasing: bytes.prefix(count))
                digest.update(block)
                part?.update(block)
            }
            hashedTo += Int64(count)
        }
    }
}
