import Dispatch
import Logging
import Synchronization

/// Runs HTTP transfers with libcurl: many at once, on one queue, one multi handle.
///
/// `onProgress` is called on the engine's queue, `onComplete` there or (after the file is synced
/// and hashed) on a file queue, always after the last `onProgress`: keep them cheap (hop to your
/// own queue). `onComplete` is called exactly once per `start`.
public final class TransferEngine: Sendable {
    private let driver: MultiDriver
    private let lastID = Atomic<UInt64>(0)

    /// `network`: CA bundle, client certificate and proxy, for every transfer.
    public convenience init(logger: Logger, network: NetworkSettings = NetworkSettings()) {
        self.init(logger: logger, staging: WriteStaging(), network: network)
    }

    /// `staging` sets how file writes are buffered (tests make the backlog tiny).
    init(logger: Logger, staging: WriteStaging, network: NetworkSettings = NetworkSettings()) {
        driver = MultiDriver(logger: logger, staging: staging, network: network)
        if let proxy = network.proxy {
            // Without the credentials the URL may carry.
            logger.info("transfers go through a proxy", metadata: ["proxy": "\(proxy.redacted)"])
        }
    }

    public func start(
        _ request: TransferRequest,
        onProgress: @escaping @Sendable (TransferProgress) -> Void,
        onComplete: @escaping @Sendable (TransferResult) -> Void
    ) -> TransferID {
        let id = TransferID(rawValue: lastID.add(1, ordering: .relaxed).newValue)
        let driver = driver
        driver.queue.async {
            driver.start(id, request, onProgress: onProgress, onComplete: onComplete)
        }
        return id
    }

    /// Caps the rate of all file transfers together (nil: no cap), from the next 100 ms tick on.
    /// Running transfers share it evenly, and what one leaves unused goes to the others; each
    /// transfer's own `maxSpeedBytesPerSecond` caps it within its share.
    ///
    /// The service calls it at start-up with `BandwidthSchedule.limit(at:)` of
    /// `FETCHD_MAX_BANDWIDTH`, and again at each `BandwidthSchedule.nextChange(after:)`.
    public func setBandwidthLimit(bytesPerSecond: Int64?) {
        let driver = driver
        driver.queue.async { driver.setBandwidthLimit(bytesPerSecond) }
    }

    /// The cap on what every upload (a request with a `bodyFile`) sends together, apart from the
    /// downloads' budget; nil lifts it. The service sets it from `FETCHD_MAX_UPLOAD_BANDWIDTH`.
    public func setUploadBandwidthLimit(bytesPerSecond: Int64?) {
        let driver = driver
        driver.queue.async { driver.setUploadBandwidthLimit(bytesPerSecond) }
    }

    /// Stops the transfer, which completes with `.cancelled`; its file is left as it is.
    /// Does nothing for a transfer that already completed.
    public func cancel(_ id: TransferID) {
        let driver = driver
        driver.queue.async { driver.cancel(id) }
    }

    /// Cancels every transfer, frees libcurl's handles, and returns once every socket and file is
    /// closed and every `onComplete` has run. Later `start`s complete at once with `.cancelled`.
    /// Must not be called from `onProgress` or `onComplete`.
    public func shutdown() {
        dispatchPrecondition(condition: .notOnQueue(driver.queue))
        let driver = driver
        driver.queue.sync { driver.shutdown() }
        driver.pendingWork.wait()
    }
}
