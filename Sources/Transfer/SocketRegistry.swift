import CCurl
import Dispatch
import Epoll
import Glibc
import Logging

/// Watches curl's sockets in the engine's epoll set (`SocketPoller`), as CURLMOPT_SOCKETFUNCTION
/// asks.
///
/// - Connections are opened here (CURLOPT_OPENSOCKETFUNCTION) and closed here
///   (CURLOPT_CLOSESOCKETFUNCTION): out of the epoll set first, then closed.
/// - curl also asks to watch descriptors it opens and closes itself (the threaded resolver's
///   socketpair, closed right after CURL_POLL_REMOVE). Those are watched through a dup that is
///   ours to close.
/// - An event may come for a socket that was closed after the poller read it, whose number a new
///   socket may have by then: each watch has a generation, carried in its events' data, and an
///   event of another generation is dropped.
/// - An FTP control connection curl stops watching while it still waits for a reply there is
///   watched on its behalf (`ConnectionTraits.repliesWhileUnwatched`).
///
/// Used only on the engine queue (the poller runs its handlers there too).
final class SocketRegistry {
    /// What the registry must know of a new socket's connection.
    struct ConnectionTraits {
        /// It speaks TLS: a read may leave bytes in the socket (`hasBytesWaiting`).
        var isTLS: Bool
        /// curl stops watching it only when the connection goes back to its cache (HTTP). An FTP
        /// control connection also goes unwatched while curl waits on the data connection, and
        /// a reply arriving then is curl's, not a sign of a closed idle connection.
        var idlesInCache: Bool
        /// An FTP control connection. While a TLS data connection's handshake runs, libcurl 7.88
        /// watches only that connection, yet goes on with commands on this one and waits for
        /// their replies. A server that answers the handshake only once the transfer command
        /// came (vsftpd) then waits for fetchd, and fetchd for an event that never comes: curl
        /// reads the replies only when something calls it. So a reply that arrives while curl
        /// does not watch this socket goes to `onUnwatchedReply`, which calls curl for its transfer.
        var repliesWhileUnwatched = false
    }

    private final class Watch {
        /// curl's socket, the key of `watches`.
        let socket: curl_socket_t
        /// The descriptor in the epoll set: curl's socket, or our dup of it.
        let fd: Int32
        let traits: ConnectionTraits
        /// In each event's data beside the socket's number.
        let generation: UInt32
        /// What the epoll set watches the descriptor for (`Epoll.readable`, `.writable`); 0: not in it.
        var events: UInt32 = 0
        /// curl no longer watches the socket (its connection waits in curl's cache), but it stays
        /// in the set for reading until the next transfer on it (`update`).
        var isIdle = false
        /// An FTP control connection curl stopped watching, and the transfer it was last watched
        /// for: until curl watches it again, a readable event goes to `onUnwatchedReply` once
        /// (it leaves the set until `rearm`).
        var unwatchedFor: TransferID?

        /// A dup of a descriptor curl opened and closes itself: ours to close.
        var isDuplicate: Bool { fd != socket }

        init(socket: curl_socket_t, fd: Int32, traits: ConnectionTraits, generation: UInt32) {
            self.socket = socket
            self.fd = fd
            self.traits = traits
            self.generation = generation
        }
    }

    private let poller: SocketPoller
    private let logger: Logger
    /// Called on the queue when curl's socket is ready, with CURL_CSELECT_IN and/or CURL_CSELECT_OUT.
    private let onReady: (curl_socket_t, Int32) -> Void
    /// Called on the queue when bytes arrive on an FTP control connection curl does not watch,
    /// with the transfer it was last watched for.
    private let onUnwatchedReply: (curl_socket_t, TransferID) -> Void

    /// By curl's socket number.
    private var watches: [curl_socket_t: Watch] = [:]
    private var nextGeneration: UInt32 = 0
    /// Sockets opened for curl and not yet closed by it.
    private var opened: Set<Int32> = []

    /// Nil, with `errno`, when the poller cannot start.
    init?(queue: DispatchQueue, logger: Logger, onReady: @escaping (curl_socket_t, Int32) -> Void,
          onUnwatchedReply: @escaping (curl_socket_t, TransferID) -> Void) {
        self.logger = logger
        self.onReady = onReady
        self.onUnwatchedReply = onUnwatchedReply
        weak var registry: SocketRegistry?
        guard let poller = SocketPoller(queue: queue, onEvent: { events, data in registry?.ready(events, data) }) else {
            return nil
        }
        self.poller = poller
        registry = self
    }

    /// A registry dropped without `shutdown` (an engine never shut down) still ends the poller's thread.
    deinit {
        poller.stop()
    }

    /// CURLMOPT_SOCKETFUNCTION: watch `socket` for what curl wants (CURL_POLL_*) for `transfer`
    /// (nil when curl names none), which tells, when the socket is new, what its connection is.
    ///
    /// A connection curl keeps for reuse stays in the set for reading while idle: a small file's
    /// transfer on a kept connection then costs no `epoll_ctl` to add and remove it. Whatever makes
    /// an idle socket readable (the server closing the connection) takes it out; curl checks a
    /// cached connection before it reuses it.
    func update(_ socket: curl_socket_t, what: Int32, transfer: () -> EasyTransfer?) {
        if what == CURL_POLL_REMOVE {
            guard let watch = watches[socket] else { return }
            if watch.traits.repliesWhileUnwatched, let owner = transfer()?.id {
                watch.unwatchedFor = owner
                set(watch, Epoll.readable)
            } else if watch.isDuplicate || !watch.traits.idlesInCache || watch.events & Epoll.readable == 0 {
                watches[socket] = nil
                stop(watch)
            } else {
                watch.isIdle = true
                set(watch, Epoll.readable)
            }
            return
        }
        guard let watch = watches[socket]
            ?? makeWatch(for: socket, traits: transfer()?.connectionTraits ?? ConnectionTraits(isTLS: true, idlesInCache: true))
        else { return }
        watch.isIdle = false
        watch.unwatchedFor = nil
        let wantsRead = what == CURL_POLL_IN || what == CURL_POLL_INOUT
        let wantsWrite = what == CURL_POLL_OUT || what == CURL_POLL_INOUT
        set(watch, (wantsRead ? Epoll.readable : 0) | (wantsWrite ? Epoll.writable : 0))
    }

    /// Puts `watch` in the epoll set for `events` (out of it for none); on failure it stays as it was.
    private func set(_ watch: Watch, _ events: UInt32) {
        guard events != watch.events else { return }
        let operation: Epoll.Operation = events == 0 ? .delete : watch.events == 0 ? .add : .modify
        let data = UInt64(watch.generation) << 32 | UInt64(UInt32(bitPattern: watch.socket))
        guard Epoll.control(poller.epoll, operation, watch.fd, events: events, data: data) == 0 else {
            logger.error("cannot watch a curl socket", metadata: ["errno": "\(errno)"])
            return
        }
        watch.events = events
    }

    /// An event of the poller, on the queue: curl's business, unless the socket is idle in curl's
    /// cache (then it leaves the set) or the event is for a watch that is gone.
    private func ready(_ events: UInt32, _ data: UInt64) {
        let socket = Int32(bitPattern: UInt32(truncatingIfNeeded: data))
        guard let watch = watches[socket], watch.generation == UInt32(truncatingIfNeeded: data >> 32) else { return }
        let failed = events & (Epoll.hangUp | Epoll.error) != 0
        let readable = watch.events & Epoll.readable != 0 && (events & Epoll.readable != 0 || failed)
        let writable = watch.events & Epoll.writable != 0 && (events & Epoll.writable != 0 || failed)
        if readable, watch.isIdle {
            watches[socket] = nil
            stop(watch)
            return
        }
        if let owner = watch.unwatchedFor {
            guard readable else { return }
            // Out of the set until curl took the reply: it may not want it yet (it reads the last
            // one only after the data), and a level-triggered readable socket would spin.
            set(watch, 0)
            onUnwatchedReply(socket, owner)
            return
        }
        let select = (readable ? CURL_CSELECT_IN : 0) | (writable ? CURL_CSELECT_OUT : 0)
        if select != 0 { onReady(socket, select) }
    }

    /// Watches an FTP control connection curl does not watch for its next reply again (after
    /// `onUnwatchedReply`, once curl took the last one).
    func rearm(_ socket: curl_socket_t) {
        guard let watch = watches[socket], watch.unwatchedFor != nil else { return }
        set(watch, Epoll.readable)
    }

    /// Whether curl still watches `socket` for reading and bytes are waiting on it right now
    /// (poll with no timeout), so another read can go without waiting for the next event.
    /// Asked only of TLS sockets: over plain HTTP curl reads until the socket is empty, so the
    /// poll would find nothing (about 2 % of the CPU with 1,000 slow transfers).
    func hasBytesWaiting(_ socket: curl_socket_t) -> Bool {
        guard let watch = watches[socket], watch.traits.isTLS, !watch.isIdle, watch.events & Epoll.readable != 0 else { return false }
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
        Glibc.close(fd)
    }

    /// After curl_multi_cleanup: stop whatever is still watched, close whatever is still open, and
    /// end the poller's thread.
    func shutdown() {
        for watch in watches.values { stop(watch) }
        watches = [:]
        for fd in opened { Glibc.close(fd) }
        opened = []
        poller.stop()
    }

    private func makeWatch(for socket: curl_socket_t, traits: ConnectionTraits) -> Watch? {
        nextGeneration &+= 1
        if opened.contains(socket) {
            let watch = Watch(socket: socket, fd: socket, traits: traits, generation: nextGeneration)
            watches[socket] = watch
            return watch
        }
        let duplicate = fcntl(socket, F_DUPFD_CLOEXEC, 0)
        guard duplicate >= 0 else {
            logger.error("cannot watch a curl socket", metadata: ["errno": "\(errno)"])
            return nil
        }
        let watch = Watch(socket: socket, fd: duplicate, traits: ConnectionTraits(isTLS: false, idlesInCache: false),
                          generation: nextGeneration)
        watches[socket] = watch
        return watch
    }

    /// Takes `watch` out of the epoll set (before its descriptor can close) and closes our dup.
    private func stop(_ watch: Watch) {
        set(watch, 0)
        if watch.isDuplicate { Glibc.close(watch.fd) }
    }
}
