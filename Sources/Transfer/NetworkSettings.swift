/// How the engine reaches origins and webhook receivers: whom it trusts, who it is, and through
/// which proxy. One value for the engine's lifetime, so every transfer (downloads and webhook
/// deliveries alike) uses the same.
public struct NetworkSettings: Sendable {
    public var tls: TLSSettings
    /// nil: every connection goes straight to the origin.
    public var proxy: ProxySettings?

    public init(tls: TLSSettings = .systemDefault, proxy: ProxySettings? = nil) {
        self.tls = tls
        self.proxy = proxy
    }
}
