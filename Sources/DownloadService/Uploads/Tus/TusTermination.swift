import DownloadCore
import Transfer

/// Frees what a tus server holds of an ended upload job (`DELETE`, the termination extension),
/// for the sweeper. A completed upload's resource is the server's file now: it is only forgotten.
struct TusTermination: Sendable {
    let template: TransferTemplate
    let transfers: any TransferRunning

    /// Whether the resource is freed (or was gone already); `then` may be called on any thread.
    func terminate(_ job: Download, resource: String, then: @escaping @Sendable (Bool) -> Void) {
        guard job.state != .completed else { return then(true) }
        _ = transfers.start(template.tusTermination(of: resource, for: job), onProgress: { _ in }, onComplete: { result in
            guard result.failure == nil, let status = result.httpStatus else { return then(false) }
            then((200..<300).contains(status) || TusAnswer.resourceGone(result))
        })
    }
}
