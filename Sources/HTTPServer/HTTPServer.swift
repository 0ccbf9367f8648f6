import Dispatch
import Glibc
import Logging
import Synchronization

/// A minimal HTTP/1.1 server on POSIX sockets and epoll: one `EventLoop` per core, each
/// accepting connections from the shared listening sockets and serving them to the end.
public final class HTTPServer: Sendable {
    private struct State {
        var started = false
        var draining = false
        var loops: [EventLoop] = []
        var listeners: [Int32] = []
        /// Loops still watching the listeners; the listeners are closed when none is.
        var listeningLoops = 0
        var connections: [ObjectIdentifier: Connection] = [:]
        var drainWaiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var nextWaiterID = 0
        /// Held open so that, out of file descriptors, one can be freed to accept and refuse a
        /// connection; otherwise the listener would fire forever on a connection it cannot take.
        var spareDescriptor: Int32 = -1

        var isDrained: Bool { connections.isEmpty && listeningLoops == 0 }
    }

    private let configuration: HTTPServerConfiguration
    private let router: Router
    private let logger: Logger
    private let state = Mutex(State())
    private let busyProblem: HTTPResponse
    private let busyBody: [UInt8]

    public init(configuration: HTTPServerConfiguration, router: Router, logger: Logger) {
        self.configuration = configuration
        self.router = router
        self.logger = logger
        busyProblem = HTTPResponse.problem(503, detail: "The server has too many open connections; try again.",
                                           headers: HTTPHeaders([("Retry-After", "1")]))
        if case .bytes(let body) = busyProblem.body { busyBody = body } else { busyBody = [] }
    }

    /// Binds and listens (IPv4 and IPv6 literal hosts; "localhost"), or takes the passed sockets;
    /// returns the actually bound port (the first passed socket's).
    public func start() throws -> Int {
        try state.withLock { state in
            guard !state.started, !state.draining else { throw HTTPServerError("the server was already started") }
            state.started = true
        }
        let descriptors: [Int32], port: Int
        do {
            (descriptors, port) = try listeningSockets()
        } catch {
            state.withLock { $0.started = false }
            throw error
        }
        let loops: [EventLoop]
        do {
            loops = try startLoops()
        } catch {
            descriptors.forEach { _ = Glibc.close($0) }
            state.withLock { $0.started = false }
            throw error
        }
        let spare = open("/dev/null", O_RDONLY | O_CLOEXEC)
        let stopped = state.withLock { state in
            // A shutdown that overtook this start leaves nothing to stop these loops.
            guard !state.draining else { return true }
            state.loops = loops
            state.listeners = descriptors
            state.listeningLoops = loops.count
            state.spareDescriptor = spare
            // Sent under the lock, so that a shutdown's deregistration comes after them.
            for loop in loops {
                loop.execute {
                    for fd in descriptors { loop.registerExclusively(fd, Listener(fd: fd, loop: loop, server: self)) }
                }
            }
            return false
        }
        if stopped {
            (descriptors + [spare]).filter { $0 >= 0 }.forEach { _ = Glibc.close($0) }
            loops.forEach { $0.stop() }
            throw HTTPServerError("the server was shut down while starting")
        }
        let passed = configuration.inheritedListeners.map(\.description).joined(separator: ",")
        logger.info("HTTP server listening", metadata: passed.isEmpty
            ? ["http.host": "\(configuration.host)", "http.port": "\(port)"] : ["http.passed_sockets": "\(passed)"])
        return port
    }

    /// The passed sockets, or new ones bound to the configured host and port.
    private func listeningSockets() throws -> (descriptors: [Int32], port: Int) {
        let inherited = configuration.inheritedListeners
        guard let first = inherited.first else { return try Socket.listen(host: configuration.host, port: configuration.port) }
        return (inherited.map(\.descriptor), first.port)
    }

    /// Stops accepting, lets in-flight requests finish (up to `timeout` seconds), closes all connections.
    ///
    /// Idle connections close at once; a request being read or handled gets its response (with
    /// `Connection: close`); a streamed response stops consuming its stream and ends.
    public func shutdown(timeout: Double) async {
        // Taken once: a second shutdown finds no loops or listeners of its own to stop.
        let (connections, loops, listeners) = state.withLock { state in
            state.draining = true
            defer {
                state.loops = []
                state.listeners = []
            }
            return (Array(state.connections.values), state.loops, state.listeners)
        }
        for loop in loops {
            loop.execute {
                listeners.forEach(loop.deregister)
                self.loopStoppedListening(listeners)
            }
        }
        connections.forEach { $0.beginShutdown() }
        if await !waitUntilDrained(timeout: timeout) {
            let remaining = state.withLock { Array($0.connections.values) }
            logger.warning("HTTP shutdown timed out; closing remaining connections", metadata: ["http.connections": "\(remaining.count)"])
            remaining.forEach { $0.forceClose() }
            // Closing is prompt now: only cancel handlers are left to run.
            _ = await waitUntilDrained(timeout: 5)
        }
        let spare = state.withLock { state in
            defer { state.spareDescriptor = -1 }
            return state.spareDescriptor
        }
        if spare >= 0 { _ = Glibc.close(spare) }
        loops.forEach { $0.stop() }
    }

    /// Connections currently open (tests poll it to see a connection really closed).
    var connectionCount: Int {
        state.withLock { $0.connections.count }
    }

    // MARK: Accepting

    /// Runs `job` after the requests the calling event loop is handling in this turn (those one
    /// `epoll_wait` returned) have run as far as they can without waiting; off an event loop, at
    /// once. For gathering the work of concurrent requests into one batch.
    public static func afterLoopTurn(_ job: @escaping @Sendable () -> Void) {
        EventLoop.afterTurn(job)
    }

    /// One epoll loop per online core: handlers run on their connection's loop, so with fewer loops
    /// reads wait behind each other (one loop on two cores made a filtered list's p99 1.6 ×).
    public static var eventLoopCount: Int { max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1) }

    private func startLoops() throws -> [EventLoop] {
        let interval = Connection.deadlineCheckInterval(configuration)
        var loops: [EventLoop] = []
        do {
            for _ in 0..<Self.eventLoopCount {
                let loop = try EventLoop(tickInterval: interval)
                try loop.start()
                loops.append(loop)
            }
        } catch {
            loops.forEach { $0.stop() }
            throw error
        }
        return loops
    }

    /// On `loop`'s thread: the connection it accepts is its own. One per event, as nginx does
    /// by default: the listener stays readable while more wait, and each arrival wakes one
    /// waiting loop, so connections spread over the loops instead of all going to the first awake.
    fileprivate func acceptConnection(on listener: Int32, loop: EventLoop) {
        // Retries, a few, past connections that were reset before they could be taken.
        for _ in 0..<8 {
            switch Socket.accept(listener) {
            case .accepted(let fd, let remoteAddress):
                return admit(fd, remoteAddress: remoteAddress, loop: loop)
            case .failed(EINTR), .failed(ECONNABORTED):
                continue
            case .failed(EAGAIN):
                return
            case .failed(let code) where code == EMFILE || code == ENFILE:
                refuseWithoutDescriptors(listener, loop: loop)
                return
            case .failed(let code):
                logger.warning("Accept failed", metadata: ["error": "\(errorText(code))"])
                return
            }
        }
    }

    private func admit(_ fd: Int32, remoteAddress: String, loop: EventLoop) {
        enum Admission { case admitted(Connection), busy, draining }
        let admission = state.withLock { state -> Admission in
            if state.draining { return .draining }
            if state.connections.count >= configuration.maxConnections { return .busy }
            let connection = Connection(
                fd: fd, loop: loop, remoteAddress: remoteAddress, configuration: configuration, router: router, logger: logger,
                onClose: { [weak self] in self?.connectionClosed($0) }
            )
            state.connections[ObjectIdentifier(connection)] = connection
            return .admitted(connection)
        }
        switch admission {
        case .admitted(let connection):
            connection.start()
        case .busy:
            logger.debug("Connection refused: too many connections", metadata: ["http.remote": "\(remoteAddress)"])
            refuse(fd, loop: loop)
        case .draining:
            _ = Glibc.close(fd)
        }
    }

    /// Answers 503 without reading the request, then closes. Input that already arrived is
    /// drained first, as closing a socket with unread input resets the connection and may
    /// destroy the response before the client has read it.
    private func refuse(_ fd: Int32, loop: EventLoop) {
        var response: [UInt8] = []
        appendResponseHead(status: 503, headers: busyProblem.headers, framing: .length(busyBody.count), connection: "close",
                           server: ServerFields(date: loop.httpDateNow()), to: &response)
        response += busyBody
        _ = response.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
        withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 1) { buffer in
            var reads = 0
            while reads < 16 && recv(fd, buffer.baseAddress, buffer.count, 0) > 0 { reads += 1 }
        }
        _ = Glibc.close(fd)
    }

    private func refuseWithoutDescriptors(_ listener: Int32, loop: EventLoop) {
        logger.warning("Out of file descriptors; refusing a connection")
        let spare = state.withLock { state in
            defer { state.spareDescriptor = -1 }
            return state.spareDescriptor
        }
        guard spare >= 0 else { return }
        _ = Glibc.close(spare)
        if case .accepted(let fd, _) = Socket.accept(listener) { refuse(fd, loop: loop) }
        let reopened = open("/dev/null", O_RDONLY | O_CLOEXEC)
        state.withLock { $0.spareDescriptor = reopened }
    }

    // MARK: Draining

    private func connectionClosed(_ connection: Connection) {
        let waiters = state.withLock { state in
            state.connections[ObjectIdentifier(connection)] = nil
            return takeWaitersIfDrained(&state)
        }
        waiters.forEach { $0.resume(returning: true) }
    }

    /// The last loop to stop watching the listeners closes them.
    private func loopStoppedListening(_ listeners: [Int32]) {
        let (last, waiters) = state.withLock { state in
            state.listeningLoops -= 1
            return (state.listeningLoops == 0, takeWaitersIfDrained(&state))
        }
        if last { listeners.forEach { _ = Glibc.close($0) } }
        waiters.forEach { $0.resume(returning: true) }
    }

    private func takeWaitersIfDrained(_ state: inout State) -> [CheckedContinuation<Bool, Never>] {
        guard state.draining && state.isDrained else { return [] }
        defer { state.drainWaiters = [:] }
        return Array(state.drainWaiters.values)
    }

    /// True once every listener and connection is closed; false after `timeout` seconds.
    private func waitUntilDrained(timeout: Double) async -> Bool {
        await withCheckedContinuation { continuation in
            let id = state.withLock { state -> Int? in
                guard !state.isDrained else { return nil }
                let id = state.nextWaiterID
                state.nextWaiterID += 1
                state.drainWaiters[id] = continuation
                return id
            }
            guard let id else { return continuation.resume(returning: true) }
            DispatchQueue.global().asyncAfter(deadline: .now() + max(timeout, 0)) {
                self.state.withLock { $0.drainWaiters.removeValue(forKey: id) }?.resume(returning: false)
            }
        }
    }
}

/// A listening socket as one loop watches it.
private final class Listener: EventLoopHandler {
    let fd: Int32
    let loop: EventLoop
    let server: HTTPServer

    init(fd: Int32, loop: EventLoop, server: HTTPServer) {
        self.fd = fd
        self.loop = loop
        self.server = server
    }

    func readable() {
        server.acceptConnection(on: fd, loop: loop)
    }

    func writable() {}

    func tick() {}
}
