import CCurl
import Dispatch
import Glibc
import Logging

/// Watches curl's sockets with DispatchSources, as CURLMOPT_SOCKETFUNCTION asks, and closes a
/// socket only once no source watches it any more.
///
/// Why the care: a DispatchSource's descriptor sits in libdispatch's epoll set until the source's
/// cancel handler has run. Closing it earlier frees the number; the next socket gets it, libdispatch
/// mistakes it for the old one, and the new socket's events are never delivered.
///
/// - Connections are opened here (CURLOPT_OPENSOCKETFUNCTION) and closed here
///   (CURLOPT_CLOSESOCKETFUNCTION), so their close can wait for the cancel handlers.
/// - curl also asks to watch descriptors it opens and closes itself (the threaded resolver's
///   socketpair, closed right after CURL_POLL_REMOVE). Those are watched through a dup that is
///   ours to close.
///
/// Used only on the engine queue.
final class SocketRegistry {
    private final class Watch {
        /// The descriptor the sources watch: curl's socket, or our dup of it.
        let fd: Int32
        let isDuplicate: Bool
        /// A TLS connection, where a read may leave bytes in the socket (`hasBytesWaiting`).
        let isTLS: Bool
        var read: DispatchSourceRead?
        var write: DispatchSourceWrite?
        /// curl no longer watches the socket (its connection waits in curl's cache), but its read
        /// source is kept for the next transfer on it (`update`).
        var isIdle = false

        init(fd: Int32, isDuplicate: Bool, isTLS: Bool) {
            self.fd = fd
            self.isDuplicate = isDuplicate
            self.isTLS = isTLS
        }
    }

    private let queue: DispatchQueue
    /// Entered for each source until its cancel handler ran.
    private let liveSourcesGroup: DispatchGroup
    private let logger: Logger
    /// Called on the queue when curl's socket is ready, with CURL_CSELECT_IN or CURL_CSELECT_OUT.
    private let onReady: (curl_socket_t, Int32) -> Void

    /// By curl's socket number.
    private var watches: [curl_socket_t: Watch] = [:]
    /// Sockets opened for curl and not yet closed by it.
    private var opened: Set<Int32> = []
    /// Sources not yet past their cancel handler, by watched descriptor.
    private var liveSources: [Int32: Int] = [:]
    /// Descriptors to close when their last source is gone.
    private var pendingClose: Set<Int32> = []

    init(queue: DispatchQueue, liveSourcesGroup: DispatchGroup, logger: Logger,
         onReady: @escaping (curl_socket_t, Int32) -> Void) {
        self.queue = queue
        self.liveSourcesGroup = liveSourcesGroup
        self.logger = logger
        self.onReady = onReady
    }

    /// CURLMOPT_SOCKETFUNCTION: watch `socket` for what curl wants (CURL_POLL_*). `isTLS` says,
    /// when the socket is new, whether its connection speaks TLS.
    ///
    /// A connection curl keeps for reuse keeps its read source while idle: a small file's transfer
    /// on a kept connection then costs no source to make and cancel (each an `epoll_ctl` and a
    /// wake-up of libdispatch's manager thread). Whatever wakes an idle source (the server closing
    /// the connection) stops it; curl checks a cached connection before it reuses it.
    func update(_ socket: curl_socket_t, what: Int32, isTLS: () -> Bool) {
        if what == CURL_POLL_REMOVE {
            guard let watch = watches[socket] else { return }
            if watch.isDuplicate || watch.read == nil {
                watches[socket] = nil
                stop(watch)
            } else {
                watch.isIdle = true
                watch.write?.cancel()
                watch.write = nil
            }
            return
        }
        guard let watch = watches[socket] ?? makeWatch(for: socket, isTLS: isTLS()) else { return }
        watch.isIdle = false
        let wantsRead = what == CURL_POLL_IN || what == CURL_POLL_INOUT
        let wantsWrite = what == CURL_POLL_OUT || what == CURL_POLL_INOUT

        if wantsRead, watch.read == nil {
            let source = DispatchSource.makeReadSource(fileDescriptor: watch.fd, queue: queue)
            arm(source, watching: watch.fd) { [weak self, weak watch] in
                guard let self, let watch else { return }
                self.readable(socket, watch)
            }
            watch.read = source
        } else if !wantsRead, let source = watch.read {
            source.cancel()
            watch.read = nil
        }
        if wantsWrite, watch.write == nil {
            let source = DispatchSource.makeWriteSource(fileDescriptor: watch.fd, queue: queue)
            arm(source, watching: watch.fd) { [onReady] in onReady(socket, CURL_CSELECT_OUT) }
            watch.write = source
        } else if !wantsWrite, let source = watch.write {
            source.cancel()
            watch.write = nil
        }
    }

    /// The read source of `watch` fired: curl's business, unless the socket is idle in curl's cache.
    private func readable(_ socket: curl_socket_t, _ watch: Watch) {
        guard watch.isIdle else { return onReady(socket, CURL_CSELECT_IN) }
        guard watches[socket] === watch else { return }
        watches[socket] = nil
        stop(watch)
    }

    /// Whether curl still watches `socket` for reading and bytes are waiting on it right now
    /// (poll with no timeout), so another read can go without waiting for the next event.
    /// Asked only of TLS sockets: over plain HTTP curl reads until the socket is empty, so the
    /// poll would find nothing (about 2 % of the CPU with 1,000 slow transfers).
    func hasBytesWaiting(_ socket: curl_socket_t) -> Bool {
        guard let watch = watches[socket], watch.isTLS, !watch.isIdle, watch.read != nil else { return false }
        var ready = pollfd(fd: watch.fd, events: Int16(POLLIN), revents: 0)
        return poll(&ready, 1, 0) == 1 && ready.revents & Int16(POLLIN) != 0
    }

    /// CURLOPT_OPENSOCKETFUNCTION, once the address has passed the policy.
    func openSocket(family: Int32, type: Int32, protocol: Int32) -> curl_socket_t {
        let fd = socket(family, type | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
        guard fd >= 0 else { return CURL_SOCKET_BAD }
        opened.insert(fd)
        return fd
    }

    /// CURLOPT_CLOSESOCKETFUNCTION. curl unregisters a socket before closing it, but a socket still
    /// watched is stopped here all the same.
    func closeSocket(_ fd: curl_socket_t) {
        opened.remove(fd)
        if let watch = watches.removeValue(forKey: fd) { stop(watch) }
        close(whenUnwatched: fd)
    }

    /// After curl_multi_cleanup: stop whatever is still watched and close whatever is still open.
    func shutdown() {
        for watch in watches.values { stop(watch) }
        watches = [:]
        for fd in opened { close(whenUnwatched: fd) }
        opened = []
    }

    private func makeWatch(for socket: curl_socket_t, isTLS: Bool) -> Watch? {
        if opened.contains(socket) {
            let watch = Watch(fd: socket, isDuplicate: false, isTLS: isTLS)
            watches[socket] = watch
            return watch
        }
        let duplicate = fcntl(socket, F_DUPFD_CLOEXEC, 0)
        guard duplicate >= 0 else {
            logger.error("cannot watch a curl socket", metadata: ["errno": "\(errno)"])
            return nil
        }
        let watch = Watch(fd: duplicate, isDuplicate: true, isTLS: false)
        watches[socket] = watch
        return watch
    }

    private func arm(_ source: some DispatchSourceProtocol, watching fd: Int32,
                     handler: @escaping () -> Void) {
        liveSources[fd, default: 0] += 1
        liveSourcesGroup.enter()
        source.setEventHandler(handler: handler)
        source.setCancelHandler { [self] in
            let remaining = liveSources[fd, default: 1] - 1
            liveSources[fd] = remaining == 0 ? nil : remaining
            if remaining == 0, pendingClose.remove(fd) != nil {
                Glibc.close(fd)
            }
            liveSourcesGroup.leave()
        }
        source.resume()
    }

    private func stop(_ watch: Watch) {
        watch.read?.cancel()
        watch.write?.cancel()
        watch.read = nil
        watch.write = nil
        if watch.isDuplicate { close(whenUnwatched: watch.fd) }
    }

    /// Closes `fd` now if no source watches it, else once the last cancel handler ran.
    private func close(whenUnwatched fd: Int32) {
        if liveSources[fd, default: 0] == 0 {
            Glibc.close(fd)
        } else {
            pendingClose.insert(fd)
        }
    }
}
