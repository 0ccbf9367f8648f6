import CCurl

/// The options of an `ftp://`, `ftps://` or `sftp://` transfer, and what its server said about
/// the file before sending it.
extension EasyTransfer {
    /// Resume at `offset` (REST, or an SFTP read offset), the file's size and time asked for (SIZE
    /// and MDTM, or a stat), TLS and trust as configured.
    func configureRemote(_ scheme: RemoteFile.Scheme, resumeOffset offset: Int64?, settings: RemoteFileSettings) throws(TransferFailure) {
        if request.bodyFile == nil {
            try set(CURLOPT_FILETIME, 1)
            if let offset { try set(CURLOPT_RESUME_FROM_LARGE, offset: offset) }
        } else if request.appendsAtServerSize {
            // -1: the server's size (SIZE, or a stat), then APPE or an append-mode open.
            try set(CURLOPT_RESUME_FROM_LARGE, offset: -1)
        }
        // Through an HTTP proxy: a CONNECT tunnel, never the proxy's own FTP gateway.
        try set(CURLOPT_HTTPPROXYTUNNEL, 1)
        switch scheme {
        case .ftp, .ftps:
            // Passive data connections go to the control connection's address, whatever the
            // server's PASV answer names: a server cannot point fetchd at another host.
            try set(CURLOPT_FTP_SKIP_PASV_IP, 1)
            if scheme == .ftp { try set(CURLOPT_USE_SSL, Self.useSSL(settings.ftpTLS)) }
            // libcurl 7.88 closes an upload's TLS 1.3 data connection while the server's session
            // tickets are unread there: the reset loses the file's last bytes (vsftpd answers 426;
            // curl CLI: 4 of 40 uploads of 300 kB, none over TLS 1.2). Fixed in curl 8.9.
            if request.bodyFile != nil {
                try set(CURLOPT_SSLVERSION, CURL_SSLVERSION_DEFAULT | CURL_SSLVERSION_MAX_TLSv1_2)
            }
        case .sftp:
            // Submissions are refused without known hosts; an engine without them trusts no key.
            try set(CURLOPT_SSH_KNOWNHOSTS, settings.knownHosts ?? "/dev/null")
            var methods = Int(CURLSSH_AUTH_PASSWORD)
            if let key = settings.sshKey {
                try set(CURLOPT_SSH_PRIVATE_KEYFILE, key)
                methods |= Int(CURLSSH_AUTH_PUBLICKEY)
            }
            try set(CURLOPT_SSH_AUTH_TYPES, methods)
        }
    }

    /// Has curl run this transfer soon, though none of the sockets it watches is ready: a pause
    /// and its end queue a run (curl_easy_pause offers the only public way). Not while the body
    /// flows, or while paused for the file's writer or the bandwidth budget. On the engine queue,
    /// outside curl.
    func runSoon() -> CURLcode {
        guard !isPaused, receiver.plan == nil, uploaded == 0 else { return CURLE_OK }
        let code = curl_easy_pause(handle, CURLPAUSE_ALL)
        guard code == CURLE_OK else { return code }
        return curl_easy_pause(handle, CURLPAUSE_CONT)
    }

    private static func useSSL(_ mode: RemoteFileSettings.FTPTLS) -> Int {
        switch mode {
        case .require: Int(CURLUSESSL_ALL.rawValue)
        case .try: Int(CURLUSESSL_TRY.rawValue)
        case .never: Int(CURLUSESSL_NONE.rawValue)
        }
    }

    /// The file as the server described it: its size and modification time. `sending`: its bytes
    /// are arriving, and curl counts what is left to send from the resume offset; else the
    /// transfer ended without a byte, which curl does only when nothing was left past the offset.
    /// nil while the server has not said.
    func describedRemoteFile(resumeOffset: Int64?, sending: Bool) -> RemoteFile? {
        var remaining: curl_off_t = 0
        if sending {
            guard fetchd_easy_getinfo_off(handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &remaining) == CURLE_OK, remaining >= 0 else {
                return nil
            }
        }
        var modified: curl_off_t = -1
        _ = fetchd_easy_getinfo_off(handle, CURLINFO_FILETIME_T, &modified)
        return RemoteFile(size: (resumeOffset ?? 0) + Int64(remaining), modified: modified >= 0 ? Int64(modified) : nil)
    }

    /// The last FTP reply (the control connection's lines come through the header callback), for
    /// the error message of a refusal. Replies carry no credentials: `PASS` is never echoed.
    static func ftpReply(_ bytes: UnsafeRawBufferPointer) -> String {
        var line = String(decoding: bytes, as: UTF8.self)
        while line.last?.isNewline == true { line.removeLast() }
        return line
    }
}
