/// How the engine reaches origins and webhook receivers: whom it trusts, who it is, and through
/// which proxy. One value for the engine's lifetime, so every transfer (downloads and webhook
/// deliveries alike) uses the same.
public struct NetworkSettings: Sendable {
    public var tls: TLSSettings
    /// nil: every connection goes straight to the origin.
    public var proxy: ProxySettings?
    /// FTP's TLS mode and SFTP's host keys and login key.
    public var remoteFiles: RemoteFileSettings

    public init(tls: TLSSettings = .systemDefault, proxy: ProxySettings? = nil, remoteFiles: RemoteFileSettings = RemoteFileSettings()) {
        self.tls = tls
        self.proxy = proxy
        self.remoteFiles = remoteFiles
    }
}
