import CCurl

/// Which certificate authorities fetchd trusts beyond the system's, and the client certificate it
/// presents to origins that ask for one. Read once at start; used for downloads, webhook
/// deliveries and an https:// proxy alike. Verification itself is always on.
public struct TLSSettings: Sendable {
    /// The system's CA bundle followed by the extra authorities; nil: libcurl's default store alone.
    let trustedAuthorities: PEMBlob?
    let clientCertificate: PEMBlob?
    let clientKey: PEMBlob?

    public static let systemDefault = TLSSettings(trustedAuthorities: nil, clientCertificate: nil, clientKey: nil)

    /// Which file is wrong, and how.
    public enum Invalid: Error, Equatable {
        case caBundle(String)
        case clientCertificate(String)
        case clientKey(String)
    }

    private init(trustedAuthorities: PEMBlob?, clientCertificate: PEMBlob?, clientKey: PEMBlob?) {
        self.trustedAuthorities = trustedAuthorities
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
    }

    /// - Parameters:
    ///   - caBundle: PEM certificates trusted in addition to the system's store.
    ///   - clientCertificate: PEM certificate (chain); may hold the key too.
    ///   - clientKey: PEM private key of `clientCertificate`, unless that file holds it.
    public init(caBundle: String?, clientCertificate: String?, clientKey: String?) throws(Invalid) {
        var authorities: PEMBlob?
        if let caBundle {
            guard let extra = PEMBlob.read(caBundle) else { throw .caBundle("cannot read the file") }
            guard PEMBlob.contains("-----BEGIN CERTIFICATE-----", in: extra) else {
                throw .caBundle("no PEM certificate (-----BEGIN CERTIFICATE-----) in it")
            }
            // CURLOPT_CAINFO_BLOB replaces libcurl's CA file rather than adding to it, so the
            // system's bundle goes first in the same blob: its public CAs keep working.
            let system = Self.systemBundlePath().flatMap(PEMBlob.read) ?? []
            authorities = PEMBlob(system + Array("\n".utf8) + extra)
        }
        var certificate: PEMBlob?
        var key: PEMBlob?
        if let clientCertificate {
            guard let pem = PEMBlob.read(clientCertificate) else { throw .clientCertificate("cannot read the file") }
            guard PEMBlob.contains("-----BEGIN CERTIFICATE-----", in: pem) else {
                throw .clientCertificate("no PEM certificate (-----BEGIN CERTIFICATE-----) in it")
            }
            certificate = PEMBlob(pem)
            if let clientKey {
                guard let keyPEM = PEMBlob.read(clientKey) else { throw .clientKey("cannot read the file") }
                guard PEMBlob.contains("PRIVATE KEY-----", in: keyPEM) else { throw .clientKey("no PEM private key in it") }
                key = PEMBlob(keyPEM)
            } else if !PEMBlob.contains("PRIVATE KEY-----", in: pem) {
                throw .clientKey("needed: the certificate file holds no private key")
            }
        } else if clientKey != nil {
            throw .clientKey("given without a client certificate")
        }
        self.init(trustedAuthorities: authorities, clientCertificate: certificate, clientKey: key)
    }

    /// The handle's trust and identity, for origins and for an https:// proxy, as *_BLOB options.
    var curlOptions: [(CURLoption, PEMBlob)] {
        var options: [(CURLoption, PEMBlob)] = []
        if let trustedAuthorities {
            options += [(CURLOPT_CAINFO_BLOB, trustedAuthorities), (CURLOPT_PROXY_CAINFO_BLOB, trustedAuthorities)]
        }
        if let clientCertificate { options.append((CURLOPT_SSLCERT_BLOB, clientCertificate)) }
        if let clientKey { options.append((CURLOPT_SSLKEY_BLOB, clientKey)) }
        return options
    }

    /// libcurl's built-in CA file (CURLINFO_CAINFO; /etc/ssl/certs/ca-certificates.crt on Debian).
    private static func systemBundlePath() -> String? {
        guard let handle = curl_easy_init() else { return nil }
        defer { curl_easy_cleanup(handle) }
        var path: UnsafeMutablePointer<CChar>?
        guard fetchd_easy_getinfo_cstr(handle, CURLINFO_CAINFO, &path) == CURLE_OK, let path else { return nil }
        return String(cString: path)
    }
}
