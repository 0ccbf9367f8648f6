/// What an upload to an `ftp://`, `ftps://` or `sftp://` URL takes besides an HTTP one's: the
/// write-only `auth` (as a download's); no `POST` (a file server stores the file) and no `tus`.
extension UploadValidator {
    static func validateFileServerFields(_ fields: inout BodyFields, into result: inout NewUpload, fail: (String, String) -> Void) {
        if let value = fields.take("auth"), value != .null {
            switch SubmissionValidator.auth(value, for: result.parsedURL.scheme.isEmpty ? nil : result.parsedURL) {
            case .success(let (username, password)): result.url = URLUserInfo.replacing(in: result.url, username: username, password: password)
            case .failure(let problem): fail("auth", problem.message)
            }
        }
        guard result.parsedURL.isFileServer else { return }
        if result.method == .post { fail("method", "POST is for http(s) URLs only: a file server stores the file") }
        if result.uploadProtocol == .tus { fail("protocol", "tus is for http(s) URLs only") }
    }
}
