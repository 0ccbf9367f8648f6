/// What the engine's socket registry learns of a transfer's connections (`SocketRegistry.update`).
extension EasyTransfer {
    /// What the socket registry must know of the current hop's connection.
    var connectionTraits: SocketRegistry.ConnectionTraits {
        SocketRegistry.ConnectionTraits(isTLS: connectsOverTLS, idlesInCache: remoteScheme == nil,
                                        repliesWhileUnwatched: remoteScheme?.isFTP == true)
    }

    /// Whether the current hop's connection speaks TLS: to an https URL, or through an https proxy.
    private var connectsOverTLS: Bool {
        if viaProxy, network.proxy?.kind == .https { return true }
        guard let url = effectiveURL else { return true }
        return url.utf8.prefix(6).map { $0 | 0x20 } == Array("https:".utf8)
    }
}
