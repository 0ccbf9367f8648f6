import DownloadCore
import Transfer

/// The limits every download attempt runs with, from the configuration, and the request for one
/// attempt of a job.
struct TransferTemplate: Sendable {
    var maxBytes: Int64?
    var stallTimeout: Duration
    var addressPolicy: AddressPolicy

    init(configuration: Configuration) {
        maxBytes = configuration.maxDownloadBytes
        stallTimeout = configuration.stallTimeout
        addressPolicy = configuration.addressPolicy
    }

    /// Resumes from `resumeFrom` bytes of partial data (with the job's validator as If-Range), or
    /// starts over when there are none; from the job's current URL (its own or a mirror), at its rate cap.
    /// `digestFile` is the job's `checksumURL` as fetched for this attempt: its algorithm is
    /// computed while writing. A `resourceTimeout` bounds the attempt by what is left of it at `now`.
    func request(for job: Download, partialPath: String, resumeFrom: Int64, digestFile: DigestFile? = nil, now: Int64 = 0) -> TransferRequest {
        var request = self.request(for: job, sink: .file(path: partialPath, resumeValidator: resumeFrom > 0 ? job.validator : nil), now: now)
        request.extraDigest = Self.extraDigest(for: job, digestFile: digestFile)
        return request
    }

    /// What every attempt of a job has, either way: its current URL and headers, its rate cap,
    /// the limits, and what is left of its `resourceTimeout` at `now`.
    func request(for job: Download, sink: TransferRequest.Sink, now: Int64) -> TransferRequest {
        var request = TransferRequest(url: job.currentURL, sink: sink)
        request.maxSpeedBytesPerSecond = job.maxBytesPerSecond
        request.headers = job.headers.map { ($0.name, $0.value) }
        if let watch = job.watch {
            // A watch's check asks only for a file other than the current one, and keeps the
            // validators of the answer for the next check.
            request.headers += watch.conditionalHeaders.map { ($0.name, $0.value) }
            // For ftp, ftps and sftp, the ETag is the size and modification time fetchd took it from.
            request.remoteFileHeld = watch.etag
            request.keepsResponseHeaders = true
        }
        request.maxBytes = maxBytes
        request.stallTimeout = stallTimeout.inSeconds
        request.addressPolicy = addressPolicy
        // A watch's check whose bytes flow is let finish past its watch's next time: its deadline
        // fails only a check that is still trying to reach its origin (`Settlement`).
        if let deadline = job.resourceDeadline, job.watch == nil {
            // At least a millisecond: curl takes 0 as no limit at all.
            request.totalTimeout = Double(max(1, deadline - now)) / 1000
        }
        return request
    }

    /// The request for the digest file at a job's `checksumURL`: the same egress policy and
    /// limits as the download, none of the origin's headers, the body kept in memory.
    func digestFileRequest(_ url: String) -> TransferRequest {
        var request = TransferRequest(url: url, sink: .memory(limit: DigestFile.maxBytes + 1))
        request.stallTimeout = stallTimeout.inSeconds
        request.addressPolicy = addressPolicy
        return request
    }

    /// The digest to compute beside SHA-256: the algorithm of the job's `checksum`, or of the
    /// digest file's line for the destination's name (or its first line, for a directory
    /// destination, whose name is not known yet).
    static func extraDigest(for job: Download, digestFile: DigestFile?) -> DigestAlgorithm? {
        let checksum = job.checksum
            // No line for the name (a directory destination's name is not known yet): the first line's.
            ?? digestFile.flatMap { try? $0.checksum(for: job.destination.fileName).get() }
            ?? digestFile?.entries.first?.checksum
        return checksum?.algorithm
    }
}
