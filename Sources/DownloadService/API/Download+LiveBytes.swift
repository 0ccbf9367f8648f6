import DownloadCore

/// What readers see of a job whose attempt runs: the bytes the attempt reported
/// (`Scheduler.liveBytes(of:)`), newer than the stored count, while the job is running or paused
/// with its attempt still stopping.
///
/// Those bytes must be read before the job's row. They are forgotten once the attempt's end is
/// committed, so when they are gone, a row read after shows that end; read after the row, a job
/// that stops (a pause) could show its bytes go back: the row older than the end, what the attempt
/// reported already forgotten.
extension Download {
    /// The bytes to show, given `liveBytes` read before this row was.
    func bytesShown(liveBytes: Int64?) -> Int64 {
        guard let liveBytes, state == .running || state == .paused else { return bytesReceived }
        return liveBytes
    }

    /// The job as a state event carries it: with `bytesShown(liveBytes:)` as its bytes.
    func showing(liveBytes: Int64?) -> Download {
        var shown = self
        shown.bytesReceived = bytesShown(liveBytes: liveBytes)
        return shown
    }
}
