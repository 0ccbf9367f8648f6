import DownloadCore
import Transfer

/// An attempt of a job with a `checksumURL` begins with its digest file, fetched under the same
/// egress policy as the download; the download starts once it is read.
extension AttemptRunner {
    func fetchDigestFile(_ url: String, for id: String, resumeFrom: Int64) {
        let transferID = transfers.start(
            template.digestFileRequest(url), onProgress: { _ in },
            onComplete: { result in self.queue.async { self.digestFileFetched(id, result, resumeFrom: resumeFrom) } })
        active[id]?.transferID = transferID
    }

    private func digestFileFetched(_ id: String, _ fetched: TransferResult, resumeFrom: Int64) {
        guard let attempt = active[id] else { return }
        // The attempt ends here unless the download starts: with the partial data as it was (a
        // segmented job's file has its full size from the start: its ranges say how far it got).
        let kept = attempt.download.ranges.isEmpty ? resumeFrom : attempt.download.ranges.bytesOnDisk
        var ended = TransferResult(failure: fetched.failure, bytesOnDisk: kept, effectiveURL: fetched.effectiveURL)
        guard attempt.stopReason == nil, fetched.failure == nil, let status = fetched.httpStatus else {
            return finished(id, ended, atDigestFile: true)
        }
        switch DigestFile.read(status: status, body: fetched.responseBody) {
        case .success(let digestFile):
            // A named file's line is looked for now, so that a digest file without one costs no download.
            let destination = attempt.download.destination
            if !destination.isDirectory, case .failure(let problem) = digestFile.checksum(for: destination.fileName) {
                return finished(id, ended, digestFileProblem: problem.message)
            }
            active[id]?.digestFile = digestFile
            start(attempt.download, resumeFrom: resumeFrom)
        case .failure(let problem) where DigestFile.isTransient(status: status):
            // Like an origin's 408, 429 or 5xx: worth another attempt.
            ended.failure = .network("the digest file \(problem.message)")
            finished(id, ended, atDigestFile: true)
        case .failure(let problem):
            finished(id, ended, digestFileProblem: problem.message)
        }
    }
}
