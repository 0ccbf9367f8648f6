import DownloadCore
import Transfer

/// A running transfer's progress as last reported.
/// For an upload, the bytes are those sent and the size of its source.
struct LiveProgress: Sendable, Equatable {
    var session: String
    var bytesReceived: Int64
    var bytesExpected: Int64?
    var direction: Direction = .download

    /// As a progress event shows it: `kind`, then a download's `bytesReceived` and
    /// `bytesExpected`, or an upload's `bytesSent` and `bytesTotal`.
    func write(into json: inout JSONWriter) {
        json.field("kind", direction.rawValue)
        json.field(direction == .upload ? "bytesSent" : "bytesReceived", bytesReceived)
        json.field(direction == .upload ? "bytesTotal" : "bytesExpected", bytesExpected)
    }
}

/// Why an attempt was stopped on purpose: `requestChanged` is a client's new url, headers,
/// mirrors or rate cap; `sizeMismatch` drops data carried over from another URL; `unclaimed` ends
/// a transfer its pass started before the claim, which then did not commit (see `EarlyStart`).
enum StopReason { case cancel, pause, shutdown, requestChanged, sizeMismatch, unclaimed }

/// A job this node runs an attempt of, from the pass that chose it until its settlement is handed
/// to the completer.
struct ActiveAttempt {
    /// Behind a reference: the runner's dictionary of attempts keeps up to twice as many buckets
    /// as attempts, and the job is most of an attempt's size (with 1,000 transfers, 1.9 MB of
    /// buckets inline, 0.5 MB so).
    @CopyOnWrite var download: Download
    var transferID: TransferID?
    var stopReason: StopReason?
    var persistedAt: Int64
    var attemptStartedAt: Int64
    /// Holds one of the discretionary share of slots.
    var discretionary: Bool
    /// Bytes it still expects to write, counted against free disk space.
    var remainingBytes: Int64
    /// The job's `checksumURL` as fetched at the start of this attempt.
    var digestFile: DigestFile? = nil
    /// Connections it holds of its host's `maxTransfersPerHost`.
    var connections = 1
    /// A first connection that asks for the first part only, to go on over `connections` (see
    /// SegmentedAttempts), until its response shows it stays alone.
    var mayUseRanges = false
    /// The attempt over several connections, when it runs so.
    var ranges: (any SegmentsRunning)?
    /// The attempt of a job whose destination is an object.
    var object: ObjectTransfer?
    /// The attempt of an upload made of several requests (tus, object storage).
    var sending: (any UploadSending)?
    /// An upload's source is being checked against its `checksum`.
    var verifyingSource = false
    /// The source's SHA-256 as that check read it (nil before): a plain upload's digest, not read again.
    var sourceSHA256: String?
    /// An upload's source, open and checked against its pin, until the attempt settles.
    var source: SourceFile?
    /// An upload's 307s and 308s followed so far, and the URL the last one pointed to.
    var redirects = 0
    var redirectedTo: String?
    /// Bytes on disk when the attempt (over several connections) started.
    var bytesAtStart: Int64 = 0
    /// What the first connection's response said to name the file by, kept for the settlement
    /// of the ranges that followed it (a directory destination's file is named at placement).
    var firstResponse: (contentDisposition: String?, effectiveURL: String?)?
    /// Its body is in and its slot went to the next job; it settles behind (`bodyReceived`).
    var slotFreed = false

    /// Whether an attempt runs that a stop must cancel.
    var isAttempting: Bool { transferID != nil || ranges != nil || object != nil || sending != nil || verifyingSource }
}
