import DownloadCore

/// Starting a chosen job's transfer inside the pass that chooses it, before its claim commits:
/// the request is on its way while the pass writes and commits (2,000 small files: about 4 %
/// sooner). A claim that then does not commit (the store failed, or another node claimed the job
/// first) stops the transfer again (`AttemptRunner.abandon`). After a pass that failed, the next
/// one waits for its claims to commit before it starts anything, so that a store that keeps
/// failing costs no request to the origin per retry.
struct EarlyStart {
    private var lastPassFailed = false

    /// Whether a job chosen now starts now rather than once its claim is committed. A job whose
    /// URL expired does not start at all: its claim only records that.
    func startsWhenChosen(_ job: Download) -> Bool {
        job.awaitingURLSince == nil && !lastPassFailed
    }

    mutating func passCommitted() { lastPassFailed = false }

    mutating func passFailed() { lastPassFailed = true }
}
