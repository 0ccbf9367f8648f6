import Transfer

/// What the scheduler needs of the transfer engine: start an attempt and stop it. The engine
/// is the one implementation; tests stand in for it to settle attempts as they choose.
protocol TransferRunning: Sendable {
    /// `onProgress` and `onComplete` run on the engine's queue; `onComplete` exactly once.
    func start(_ request: TransferRequest, onProgress: @escaping @Sendable (TransferProgress) -> Void,
               onComplete: @escaping @Sendable (TransferResult) -> Void) -> TransferID
    /// The attempt completes with `.cancelled`, its file left as it is.
    func cancel(_ id: TransferID)
}

extension TransferEngine: TransferRunning {}
