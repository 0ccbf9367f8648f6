/// How fetchd speaks to FTP and SFTP servers: whether `ftp://` must, may or must not negotiate
/// TLS, which SSH host keys it trusts, and the key it logs in with. One value for the engine's
/// lifetime, part of `NetworkSettings`.
public struct RemoteFileSettings: Sendable, Equatable {
    /// `AUTH TLS` for `ftp://` URLs (FETCHD_FTP_TLS); `ftps://` is TLS from the first byte.
    public enum FTPTLS: String, Sendable, CaseIterable {
        /// No TLS, no transfer: a server that refuses `AUTH TLS` fails the attempt with `.tls`.
        case require
        /// TLS when the server offers it, plain otherwise.
        case `try`
        /// Plain FTP.
        case never
    }

    public var ftpTLS: FTPTLS
    /// OpenSSH `known_hosts` file; without it `sftp://` is refused (no trust on first use).
    public var knownHosts: String?
    /// Private key file for SFTP public-key login (no passphrase).
    public var sshKey: String?

    public init(ftpTLS: FTPTLS = .try, knownHosts: String? = nil, sshKey: String? = nil) {
        self.ftpTLS = ftpTLS
        self.knownHosts = knownHosts
        self.sshKey = sshKey
    }
}
