import CCurl
import Confinement
import Dispatch
import Glibc
import Logging

/// Drives one curl multi handle from one serial queue: sockets through `SocketRegistry`, curl's
/// timeout through `CurlTimer`, and finished transfers through curl_multi_info_read.
/// Nothing runs while nothing is in flight: no polling, the timer is parked.
final class MultiDriver: QueueConfined, @unchecked Sendable {
    // @unchecked: apart from the two `let`s below, which are thread-safe, every property is used
    // only on `queue` (which also owns every easy handle); `assertOnQueue` checks it.
    let queue = DispatchQueue(label: "fetchd.transfer.engine")
    /// File work still running off the queue; `shutdown` waits for it.
    let pendingWork = DispatchGroup()

    private let logger: Logger
    private let multi: UnsafeMutableRawPointer
    private var timer: CurlTimer?
    /// Hands held chunks to their writers once `WriteStaging.holdTime` is up.
    private let flushTimer: DispatchSourceTimer
    private var isFlushDue = false
    private var sockets: SocketRegistry?
    private let staging: WriteStaging
    private let network: NetworkSettings
    private var transfers: [TransferID: EasyTransfer] = [:]
    private var governor: BandwidthGovernor?
    /// The budget of what uploads send, apart from the downloads'.
    private var uploadGovernor: BandwidthGovernor?
    /// Transfers whose next hop is being judged off the queue (a proxy is configured).
    private var routing: [TransferID: EasyTransfer] = [:]
    private var isShutDown = false
    /// FTP transfers that may wait with no socket watched (`checkUnwatchedFTP`).
    private var maybeUnwatched: Set<TransferID> = []

    init(logger: Logger, staging: WriteStaging, network: NetworkSettings) {
        _ = Self.curlInitialized
        guard let multi = curl_multi_init() else {
            // Only fails when malloc does; nothing sensible is left to do.
            fatalError("curl_multi_init failed")
        }
        self.logger = logger
        self.multi = multi
        self.staging = staging
        self.network = network
        flushTimer = DispatchSource.makeTimerSource(queue: queue)
        sockets = SocketRegistry(queue: queue, logger: logger, onReady: { [weak self] socket, events in
            self?.socketAction(socket, events)
        }, onUnwatchedReply: { [weak self] socket, id in
            self?.replyArrived(on: socket, for: id)
        })
        // Without it every transfer ends at once as cancelled; say why.
        if sockets == nil { logger.critical("cannot watch sockets for transfers", metadata: ["errno": "\(errno)"]) }

        let unmanagedSelf = Unmanaged.passUnretained(self).toOpaque()
        fetchd_multi_setopt_ptr(multi, CURLMOPT_SOCKETDATA, unmanagedSelf)
        fetchd_multi_setopt_socketfn(multi, CURLMOPT_SOCKETFUNCTION) { easy, socket, what, userdata, _ in
            guard let userdata else { return -1 }
            let driver = Unmanaged<MultiDriver>.fromOpaque(userdata).takeUnretainedValue()
            let transfer = easy.flatMap(EasyTransfer.owning)
            driver.sockets?.update(socket, what: what) { transfer }
            if let transfer, transfer.remoteScheme?.isFTP == true { driver.note(socket, what: what, of: transfer) }
            return 0
        }
        fetchd_multi_setopt_ptr(multi, CURLMOPT_TIMERDATA, unmanagedSelf)
        fetchd_multi_setopt_timerfn(multi, CURLMOPT_TIMERFUNCTION) { _, milliseconds, userdata in
            guard let userdata else { return -1 }
            Unmanaged<MultiDriver>.fromOpaque(userdata).takeUnretainedValue().timer?.set(milliseconds: milliseconds)
            return 0
        }
        // The caller limits concurrency; curl must not queue transfers behind a connection cap.
        fetchd_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0)

        governor = BandwidthGovernor(queue: queue) { [weak self] id in self?.resumeTransfer(id) }
        uploadGovernor = BandwidthGovernor(queue: queue) { [weak self] id in self?.resumeTransfer(id) }
        timer = CurlTimer(queue: queue) { [weak self] in self?.socketAction(CURL_SOCKET_TIMEOUT, 0) }
        flushTimer.setEventHandler { [weak self] in
            guard let self else { return }
            isFlushDue = false
            staging.flush()
        }
        flushTimer.schedule(deadline: .distantFuture)
        flushTimer.resume()
    }

    /// curl_global_init is not safe to race with other curl calls: do it once, before any.
    private static let curlInitialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// Starts a transfer; on the queue.
    func start(_ id: TransferID, _ request: TransferRequest,
               onProgress: @escaping @Sendable (TransferProgress) -> Void,
               onComplete: @escaping @Sendable (TransferResult) -> Void) {
        assertOnQueue()
        guard !isShutDown, let sockets else {
            onComplete(TransferResult(failure: .cancelled))
            return
        }
        var receiveBufferSize = Self.receiveBufferShare(running: transfers.count + routing.count)
        // Under a bandwidth cap, bursts are kept short too (`BandwidthGovernor`).
        if let size = governor?.receiveBufferSize() { receiveBufferSize = min(receiveBufferSize, size) }
        let transfer: EasyTransfer
        do {
            transfer = try EasyTransfer(
                id: id, request: request, network: network, sockets: sockets, staging: staging,
                receiveBufferSize: receiveBufferSize, logger: logger,
                onWritable: { [weak self] in
                    guard let self else { return }
                    queue.async { self.resumeTransfer(id) }
                },
                onProgress: onProgress, onComplete: onComplete)
        } catch {
            onComplete(TransferResult(failure: error))
            return
        }
        launch(transfer, url: request.url)
    }

    /// curl's receive buffer for a transfer starting beside `running` others: all transfers
    /// together get about 4 MiB, each between 8 KiB and the 256 KiB a fast transfer uses. A
    /// buffer's pages stay resident once a read has filled them, and a throttled origin sends in
    /// bursts: with 1,000 transfers, 256 KiB buffers cost ~50 KB each, and 8 KiB rather than
    /// curl's default 16 KiB saves another ~5 KB each (curl reads a burst in more calls per event).
    static func receiveBufferShare(running: Int) -> Int {
        min(256 << 10, max(8 << 10, (4 << 20) / (running + 1)))
    }

    /// Hands the transfer to curl; with a proxy, once its route to `url` is decided off the queue
    /// (that may resolve names). On the queue.
    private func launch(_ transfer: EasyTransfer, url: String) {
        guard let proxy = network.proxy else {
            add(transfer)
            return
        }
        let id = transfer.id
        routing[id] = transfer
        let policy = transfer.addressPolicy
        DispatchQueue.global().async { [self] in
            let route = ProxyRouting.route(url, proxy: proxy, policy: policy)
            queue.async { [self] in
                // Gone: cancelled (and finished) meanwhile.
                guard let transfer = routing.removeValue(forKey: id) else { return }
                do throws(TransferFailure) {
                    try transfer.take(route.get())
                } catch {
                    transfer.finish(.failed(error), queue: queue, work: pendingWork)
                    return
                }
                add(transfer)
            }
        }
    }

    private func add(_ transfer: EasyTransfer) {
        // curl's own cap on its connection cache is 4 per transfer running at that moment: when few
        // run for a moment (between waves of small files or webhook deliveries) it closes the idle
        // connections the next wave would reuse. The cap grows with the transfers, but not below a floor.
        fetchd_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(Self.connectionCacheFloor, 4 * (transfers.count + 1)))
        let code = curl_multi_add_handle(multi, transfer.handle)
        guard code == CURLM_OK else {
            transfer.finish(.failed(.network(String(cString: curl_multi_strerror(code)))),
                            queue: queue, work: pendingWork)
            return
        }
        transfers[transfer.id] = transfer
        // A reused control connection may carry the whole command phase in curl's first run.
        if transfer.remoteScheme?.isFTP == true { maybeUnwatched.insert(transfer.id) }
        if let throttle = transfer.throttle { governor?.add(transfer.id, throttle) }
        if let throttle = transfer.sendThrottle { uploadGovernor?.add(transfer.id, throttle) }
        logger.debug("transfer started", metadata: ["transfer.id": "\(transfer.id)"])
    }

    /// Stops a transfer, which completes with `.cancelled`; on the queue.
    func cancel(_ id: TransferID) {
        assertOnQueue()
        end(id, .failed(.cancelled))
    }

    /// The cap on all transfers together, bytes per second (nil: none); on the queue.
    func setBandwidthLimit(_ bytesPerSecond: Int64?) {
        assertOnQueue()
        governor?.setLimit(bytesPerSecond)
    }

    /// The cap on what all uploads send together, bytes per second (nil: none); on the queue.
    func setUploadBandwidthLimit(_ bytesPerSecond: Int64?) {
        assertOnQueue()
        uploadGovernor?.setLimit(bytesPerSecond)
    }

    private func end(_ id: TransferID, _ outcome: EasyTransfer.Outcome) {
        if let transfer = routing.removeValue(forKey: id) {
            transfer.finish(outcome, queue: queue, work: pendingWork)
            return
        }
        guard let transfer = transfers.removeValue(forKey: id) else { return }
        governor?.remove(id)
        uploadGovernor?.remove(id)
        curl_multi_remove_handle(multi, transfer.handle)
        transfer.finish(outcome, queue: queue, work: pendingWork)
    }

    /// A transfer paused for its file's writer may go on.
    private func resumeTransfer(_ id: TransferID) {
        assertOnQueue()
        guard !isShutDown, let transfer = transfers[id] else { return }
        let code = transfer.resumeTransfer()
        flushSoon()
        if code != CURLE_OK { end(id, .curl(code)) }
    }

    /// A reply on an FTP control connection curl does not watch (`SocketRegistry.ConnectionTraits
    /// .repliesWhileUnwatched`): has curl run the transfer, and once curl took the reply, watch
    /// for the next one.
    private func replyArrived(on socket: curl_socket_t, for id: TransferID) {
        assertOnQueue()
        let replies = transfers[id]?.repliesReceived
        guard runSoon(id) else { return }
        // Queued behind curl's run, which runSoon's zero timeout queued (`CurlTimer`).
        queue.async { [weak self] in
            guard let self, let transfer = transfers[id], transfer.repliesReceived != replies else { return }
            sockets?.rearm(socket)
        }
    }

    /// Has curl run a transfer soon though none of its sockets is ready (`EasyTransfer.runSoon`);
    /// false when it is gone or ended.
    private func runSoon(_ id: TransferID) -> Bool {
        assertOnQueue()
        guard !isShutDown, let transfer = transfers[id] else { return false }
        let code = transfer.runSoon()
        guard code == CURLE_OK else {
            end(id, .curl(code))
            return false
        }
        return true
    }

    /// Cancels everything, frees the multi handle and closes the sockets; on the queue. Wait for
    /// `pendingWork` (off the queue) to know the file work is done.
    func shutdown() {
        assertOnQueue()
        guard !isShutDown else { return }
        isShutDown = true
        for id in Array(transfers.keys) + Array(routing.keys) { cancel(id) }
        // Closes cached connections through CURLOPT_CLOSESOCKETFUNCTION, so the registry is still needed.
        curl_multi_cleanup(multi)
        timer?.cancel()
        flushTimer.cancel()
        governor?.stop()
        governor = nil
        uploadGovernor?.stop()
        uploadGovernor = nil
        sockets?.shutdown()
        sockets = nil
    }

    /// How often one read event may go back to curl while its socket has more bytes waiting.
    /// Over TLS curl reads one record (16 KiB) per call; going on here costs a poll(2) where
    /// waiting for the next event would cost a return to the poller's `epoll_wait`, and a wait for
    /// the queue.
    private static let readsPerEvent = 16
    /// Idle connections kept for reuse however few transfers run (see `add`).
    private static let connectionCacheFloor = 64

    private func socketAction(_ socket: curl_socket_t, _ events: Int32) {
        assertOnQueue()
        guard !isShutDown else { return }
        var reads = 0
        repeat {
            var running: Int32 = 0
            let code = curl_multi_socket_action(multi, socket, events, &running)
            if code != CURLM_OK {
                logger.error("curl_multi_socket_action failed", metadata: ["curl.error": "\(String(cString: curl_multi_strerror(code)))"])
                break
            }
            reads += 1
        } while events == CURL_CSELECT_IN && reads < Self.readsPerEvent && sockets?.hasBytesWaiting(socket) == true
        flushSoon()
        completeFinishedTransfers()
        checkUnwatchedFTP()
    }

    /// Which sockets curl watches for an FTP transfer, from CURLMOPT_SOCKETFUNCTION.
    private func note(_ socket: curl_socket_t, what: Int32, of transfer: EasyTransfer) {
        if what != CURL_POLL_REMOVE {
            transfer.watchedSockets.insert(socket)
        } else if transfer.watchedSockets.remove(socket) != nil, transfer.watchedSockets.isEmpty {
            maybeUnwatched.insert(transfer.id)
        }
    }

    /// libcurl 7.88 ends an FTP transfer's command phase in one call when the `EPSV` reply came in
    /// time, and then waits to open the data connection, "a little while", watching no socket of
    /// the transfer and setting no timeout but the connect timeout. A transfer that has heard from
    /// its server and is left so after a call into curl is run again at once.
    private func checkUnwatchedFTP() {
        guard !maybeUnwatched.isEmpty else { return }
        maybeUnwatched = maybeUnwatched.filter { id in
            guard let transfer = transfers[id] else { return false }
            // Not connected yet: nothing to judge until it hears from its server.
            if transfer.repliesReceived == 0 { return true }
            if transfer.watchedSockets.isEmpty { _ = runSoon(id) }
            return false
        }
    }

    /// Arms the flush timer if chunks are held and it is not armed yet.
    private func flushSoon() {
        guard staging.isHolding, !isFlushDue else { return }
        isFlushDue = true
        flushTimer.schedule(deadline: .now() + WriteStaging.holdTime, leeway: .milliseconds(1))
    }

    private func completeFinishedTransfers() {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(multi, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
            // The message is curl's and dies with remove_handle: copy first.
            let code = message.pointee.data.result
            guard let transfer = EasyTransfer.owning(handle), transfers.removeValue(forKey: transfer.id) != nil
            else { continue }
            governor?.remove(transfer.id)
            uploadGovernor?.remove(transfer.id)
            curl_multi_remove_handle(multi, handle)
            // With a proxy fetchd follows redirects itself, judging every hop.
            if network.proxy != nil, let next = transfer.redirectTarget(after: code) {
                do throws(TransferFailure) {
                    try transfer.follow(to: next)
                    launch(transfer, url: next)
                } catch {
                    transfer.finish(.failed(error), queue: queue, work: pendingWork)
                }
                continue
            }
            transfer.finish(.curl(code), queue: queue, work: pendingWork)
        }
    }
}
