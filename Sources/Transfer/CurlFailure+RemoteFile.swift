import CCurl

extension TransferFailure {
    /// What a curl error of an FTP or SFTP transfer means, where it differs from HTTP's; nil for
    /// the errors every scheme shares (connecting, timeouts, the address policy).
    /// - Parameters:
    ///   - reply: the server's last FTP reply line, the message of a refusal.
    ///   - uploading: the transfer sends a file, appending to the server's (`appendsAtServerSize`).
    init?(remote scheme: RemoteFile.Scheme, curlCode code: CURLcode, message: String, reply: String?, uploading: Bool = false) {
        let said = reply.map { "\(message): \($0)" } ?? message
        switch code {
        case CURLE_LOGIN_DENIED:
            self = .loginFailed(said)
        case CURLE_PEER_FAILED_VERIFICATION where scheme == .sftp:
            // libcurl's own words ("SSL peer certificate or SSH remote key was not OK") do not say which.
            self = .hostKey("the server's host key is not in FETCHD_SSH_KNOWN_HOSTS, or differs from the one there")
        case CURLE_USE_SSL_FAILED:
            self = .tls(said)
        case CURLE_REMOTE_FILE_NOT_FOUND, CURLE_REMOTE_ACCESS_DENIED:
            self = .remoteRefused(said)
        case CURLE_FTP_COULDNT_USE_REST where uploading:
            // curl could not read the source up to the server's size: that file is longer than
            // the source, so it is not a part of it.
            self = .rangeMismatch("the server's file is longer than the source; the upload starts over")
        case CURLE_BAD_DOWNLOAD_RESUME:
            self = .rangeMismatch(message)
        case CURLE_OPERATION_TIMEDOUT where Self.ftpCode(reply) == 421:
            // libcurl reports any 421 ("service not available", as vsftpd answers a client over
            // its connection limits) as a timeout: the server answered, and asks to try later.
            self = .network(said)
        case CURLE_FTP_COULDNT_RETR_FILE, CURLE_UPLOAD_FAILED, CURLE_QUOTE_ERROR, CURLE_FTP_COULDNT_SET_TYPE:
            // A 4xx reply passes (try again); a 5xx is the server's final word.
            self = Self.ftpCode(reply).map { $0 >= 500 } == true ? .remoteRefused(said) : .network(said)
        default:
            return nil
        }
    }

    /// The three-digit code that starts an FTP reply line.
    static func ftpCode(_ reply: String?) -> Int? {
        guard let reply, reply.utf8.count >= 3, let code = Int(reply.prefix(3)), (100...599).contains(code) else { return nil }
        return code
    }
}
