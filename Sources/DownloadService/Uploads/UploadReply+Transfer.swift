import DownloadCore
import Transfer

extension UploadReply {
    /// The server's answer to an upload's request as the Upload shows it: its status and the
    /// headers a client acts on, and the body when it was kept in memory (not written to a reply
    /// destination) and is short UTF-8 text. Nil when no answer came (the request failed before one).
    init?(_ result: TransferResult, bodyInMemory: Bool) {
        guard let status = result.httpStatus else { return nil }
        self.init(status: status, contentType: result.responseHeader("content-type"), location: result.responseHeader("location"),
                  etag: result.responseHeader("etag"),
                  body: bodyInMemory ? UploadReply.body(result.responseBody) : nil)
    }
}
