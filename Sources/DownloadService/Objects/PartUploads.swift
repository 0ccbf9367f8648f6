import Confinement
import Dispatch
import DownloadCore
import Logging
import Transfer

/// An object's multipart upload from its staging file: each part is read back and hashed into the
/// object's digest in order, then uploaded — several at once, up to `maxInFlight` — and committed
/// in order with its ETag and the digest's state after it. Only a committed part counts: its
/// stretch of the file is given back to the disk then (`onCommitted`), and a crash resumes after it.
/// Hashing the next part while others go up, and sending two at once, keeps the storage busy:
/// one part at a time left it idle while each part was read and signed.
final class PartUploads: QueueConfined, @unchecked Sendable {  // all mutable state only on `queue` (assertOnQueue)
    let queue: DispatchQueue
    private let client: ObjectStorageClient
    private let bucket: String
    private let staging: StagingFile
    private let extra: DigestAlgorithm?
    private let maxInFlight: Int
    private let commit: ObjectTransfer.Commit
    /// A commit was kept: the parts up to the offset may leave the disk (`onChange` follows). Set by
    /// the owner.
    var onCommitted: (Int64) -> Void = { _ in }
    /// Something changed that the owner waits for (a part hashed, sent or committed, a failure).
    /// Set by the owner.
    var onChange: () -> Void = {}

    /// The upload with the parts committed so far; nil before it is created.
    private(set) var upload: ObjectUpload?
    /// The object's digest over the bytes before `hashedEnd`, the parts being sent included.
    private(set) var digest: ResumableDigest
    private(set) var hashedEnd: Int64
    private(set) var failure: ObjectStorageFailure?
    private var hashing = false
    /// Parts being sent, by number: their bytes and the digest's state after them.
    private var inFlight: [Int: (range: Range<Int64>, state: String)] = [:]
    /// Parts sent whose earlier parts are still on their way, by number.
    private var sent: [Int: (part: ObjectUpload.Part, range: Range<Int64>, state: String)] = [:]
    /// Commits handed to the store and not answered yet.
    private var committing = 0
    /// Moves on when the object starts over: what the earlier upload's requests answer is ignored.
    private var generation = 0

    init(queue: DispatchQueue, client: ObjectStorageClient, bucket: String, staging: StagingFile, extra: DigestAlgorithm?,
         maxInFlight: Int, resuming upload: ObjectUpload?, commit: @escaping ObjectTransfer.Commit) {
        self.queue = queue
        self.client = client
        self.bucket = bucket
        self.staging = staging
        self.extra = extra
        self.maxInFlight = max(1, maxInFlight)
        self.commit = commit
        // An upload whose digest state cannot be restored is not resumed (`restorable` says so).
        if let upload, let restored = upload.parts.isEmpty ? ResumableDigest(extra: extra)
            : ResumableDigest(state: upload.digestState, extra: extra) {
            self.upload = upload
            digest = restored
            hashedEnd = upload.end
        } else {
            digest = ResumableDigest(extra: extra)
            hashedEnd = 0
        }
    }

    /// The end of the committed parts.
    var committedEnd: Int64 { upload?.end ?? 0 }
    /// Nothing is being hashed, sent or committed: in particular, an upload completed now names
    /// only parts the store has, so an attempt after a crash that came before the completion was
    /// stored finds every part of it.
    var isIdle: Bool { !hashing && inFlight.isEmpty && sent.isEmpty && committing == 0 }
    /// Another part can be taken now.
    var canTake: Bool { upload != nil && failure == nil && !hashing && inFlight.count + sent.count < maxInFlight }

    private var location: ObjectLocation? { upload.map { ObjectLocation(bucket: bucket, key: $0.key) } }

    /// The upload was created (and committed by the owner): parts may go up.
    func begin(_ created: ObjectUpload) {
        assertOnQueue()
        upload = created
    }

    /// Hashes `range` (the bytes from `hashedEnd`) and sends it as the next part.
    func send(_ range: Range<Int64>) {
        assertOnQueue()
        let number = (upload?.parts.count ?? 0) + inFlight.count + sent.count + 1
        hash(range) { sha256, state in
            self.inFlight[number] = (range, state)
            self.upload(number, range, sha256: sha256)
        }
    }

    /// Hashes `range` into the digest only: the last bytes of an object put whole by the caller.
    func hashOnly(_ range: Range<Int64>) {
        assertOnQueue()
        hash(range) { _, _ in }
    }

    /// Forgets the upload and every part (the object starts over); returns the upload to abort.
    func restart() -> ObjectUpload? {
        assertOnQueue()
        let old = upload
        generation += 1
        upload = nil
        inFlight = [:]
        sent = [:]
        failure = nil
        digest = ResumableDigest(extra: extra)
        hashedEnd = 0
        return old
    }

    /// Reads and hashes `range` off the queue (a part is megabytes); `then` runs on the queue with
    /// the stretch's SHA-256 and the digest's state after it, unless the object started over.
    private func hash(_ range: Range<Int64>, then: @escaping @Sendable (String, String) -> Void) {
        hashing = true
        let (staging, start, generation) = (staging, digest, generation)
        DispatchQueue.global(qos: .utility).async {
            var next = start
            let hashed = Result { () throws(StagingFile.Failure) -> String in try staging.hash(range, into: &next) }
            let after = next
            self.queue.async {
                self.hashing = false
                guard generation == self.generation else { return self.onChange() }
                switch hashed {
                case .failure(let failure): self.failure = .unavailable("\(failure)")
                case .success(let sha256):
                    self.digest = after
                    self.hashedEnd = range.upperBound
                    then(sha256, after.state)
                }
                self.onChange()
            }
        }
    }

    private func upload(_ number: Int, _ range: Range<Int64>, sha256: String) {
        guard let upload, let location else { return }
        let body = TransferRequest.FileRange(path: staging.path, offset: range.lowerBound, length: Int64(range.count))
        let generation = generation
        client.uploadPart(location, uploadID: upload.uploadID, number: number, body: body, sha256: sha256) { answer in
            self.queue.async {
                guard generation == self.generation, let sending = self.inFlight.removeValue(forKey: number) else { return }
                switch answer {
                case .failure(let failure): self.failure = self.failure ?? failure
                case .success(let part):
                    self.sent[number] = (part, range, sending.state)
                    self.commitInOrder()
                }
                self.onChange()
            }
        }
    }

    /// Appends the parts sent that follow the committed ones, in order, and commits them.
    private func commitInOrder() {
        guard var updated = upload else { return }
        while let next = sent.removeValue(forKey: updated.parts.count + 1) {
            updated.parts.append(next.part)
            updated.digestState = next.state
        }
        guard updated != upload else { return }
        upload = updated
        let end = updated.end
        committing += 1
        commit(updated) { kept in
            self.committing -= 1
            if kept { self.onCommitted(end) }
            self.onChange()
        }
    }
}
