import CCurl

/// What is known of an attempt that went through the proxy.
struct ProxyAttempt {
    /// The proxy's answer to CONNECT (CURLINFO_HTTP_CONNECTCODE); 0 when there was none.
    var connectStatus: Int
}

extension TransferFailure {
    /// What a curl error means to a caller.
    /// - Parameters:
    ///   - message: curl's error buffer (or, when empty, its description of `code`).
    ///   - refusedAddress: the address the policy refused during this attempt, if any: a connect
    ///     failure after a refusal is reported as that refusal.
    ///   - proxy: set when the attempt went through the proxy: connecting then means connecting to it.
    ///   - connected: whether the attempt's current hop had connected when it ended; a timeout
    ///     before that is a connect timeout, so the origin was never reached.
    init(curlCode code: CURLcode, message: String, refusedAddress: String?, proxy: ProxyAttempt? = nil, connected: Bool = true) {
        if let proxy, Self.isProxyFailure(code, proxy) {
            self = .proxy(message)
            return
        }
        switch code {
        case CURLE_OPERATION_TIMEDOUT where !connected, CURLE_COULDNT_RESOLVE_HOST:
            self = .unreachable(message)
        case CURLE_COULDNT_CONNECT where refusedAddress == nil:
            self = .unreachable(message)
        case CURLE_OPERATION_TIMEDOUT:
            self = .timeout(message)
        case CURLE_UNSUPPORTED_PROTOCOL:
            self = .unsupportedScheme(message)
        case CURLE_TOO_MANY_REDIRECTS:
            self = .tooManyRedirects
        case CURLE_FILESIZE_EXCEEDED:
            self = .tooLarge
        case CURLE_COULDNT_CONNECT where refusedAddress != nil:
            self = .blockedAddress(refusedAddress ?? "")
        case CURLE_COULDNT_RESOLVE_PROXY, CURLE_PROXY:
            self = .proxy(message)
        case _ where Self.isTLSRefusal(code, message):
            self = .tls(message)
        default:
            self = .network(message)
        }
    }

    private static func isProxyFailure(_ code: CURLcode, _ proxy: ProxyAttempt) -> Bool {
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_PROXY, CURLE_PROXY:
            return true
        default:
            // An http(s):// proxy that would not open the tunnel (403, 407, 502, …).
            return proxy.connectStatus != 0 && !(200..<300).contains(proxy.connectStatus)
        }
    }

    /// The peer's certificate was not trusted, or one side refused the handshake: trying again
    /// meets the same refusal. A handshake cut by the network (reset, EOF) is not one.
    static func isTLSRefusal(_ code: CURLcode, _ message: String) -> Bool {
        switch code {
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE,
             CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
             CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED:
            return true
        case CURLE_SSL_CONNECT_ERROR:
            let cut = ["SSL_ERROR_SYSCALL", "Connection reset", "unexpected eof", "Broken pipe"]
            return !cut.contains { message.contains($0) }
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR:
            // TLS 1.3 servers refuse a client certificate after the handshake, in an alert.
            let lowered = message.lowercased()
            return lowered.contains(" alert ") && ["certificate", "unknown ca", "access denied"].contains { lowered.contains($0) }
        default:
            return false
        }
    }
}
