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
    func request(for job: Download, partialPath: String, resumeFrom: Int64) -> TransferRequest {
        var request = TransferRequest(url: job.currentURL, sink: .file(path: partialPath, resumeValidator: resumeFrom > 0 ? job.validator : nil))
        request.maxSpeedBytesPerSecond = job.maxBytesPerSecond
        request.headers = job.headers.map { ($0.name, $0.value) }
        request.maxBytes = maxBytes
        request.stallTimeout = stallTimeout.inSeconds
        request.addressPolicy = addressPolicy
        return request
    }
}
