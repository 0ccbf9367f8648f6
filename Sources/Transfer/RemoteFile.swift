/// A file on an FTP or SFTP server as the server describes it before sending it (`SIZE` and
/// `MDTM`, or an SFTP stat). Pure: it stands in for the HTTP response head, so that the resume
/// rules of `ResponsePlan` hold for these schemes too.
struct RemoteFile: Equatable {
    enum Scheme: String {
        case ftp, ftps, sftp

        /// The scheme of `url` when it is one of these (any case).
        init?(url: String) {
            guard let colon = url.firstIndex(of: ":") else { return nil }
            self.init(rawValue: url[..<colon].lowercased())
        }

        var isFTP: Bool { self != .sftp }
    }

    var size: Int64
    /// Seconds since the epoch; nil when the server does not say.
    var modified: Int64?

    /// What stands in for `If-Range`: the size and the modification time together.
    var validator: String { modified.map { "size=\(size); mtime=\($0)" } ?? "size=\(size)" }

    /// Whether this is the file whose `validator` was `held`. Only with a modification time: a
    /// size alone does not tell a file rewritten with as many bytes.
    func isUnchanged(from held: String) -> Bool {
        modified != nil && validator == held
    }

    /// The head of an HTTP origin's answer to `If-None-Match` with the file's own validator.
    var notModifiedHead: ResponseHeaders? {
        guard var head = ResponseHeaders(statusLine: "HTTP/1.1 304 304") else { return nil }
        head.add(line: "ETag: \(validator)", keeping: true)
        return head
    }

    /// The head an HTTP origin would have answered a request from `resumeOffset` with `If-Range:
    /// expected`: the whole file (200), the rest of it (206), or nothing left to send (416 with
    /// the size). nil when the file changed since `expected` was taken: the server is already
    /// sending from `resumeOffset`, so the bytes are of no use and the file must start over.
    /// An empty `expected` is partial data the job's digest vouches for (from a mirror).
    func head(resumeOffset: Int64?, expected: String?) -> ResponseHeaders? {
        let status: String
        var fields = ["ETag: \(validator)"]
        if let resumeOffset {
            if let expected, !expected.isEmpty, expected != validator { return nil }
            if resumeOffset >= size {
                status = "416"
                fields.append("Content-Range: bytes */\(size)")
            } else {
                status = "206"
                fields.append("Content-Range: bytes \(resumeOffset)-\(size - 1)/\(size)")
            }
        } else {
            status = "200"
            fields.append("Content-Length: \(size)")
        }
        guard var head = ResponseHeaders(statusLine: "HTTP/1.1 \(status) \(status)") else { return nil }
        // Kept: a watch takes the ETag for its next check.
        for field in fields { head.add(line: field, keeping: true) }
        return head
    }
}
