import Dispatch
import Glibc
import Logging

/// One accepted TCP connection: reads requests with a `RequestParser`, runs their handlers one
/// at a time and writes the responses in order (RFC 9112 §9.3.2).
///
/// `@unchecked Sendable`: every mutable property is touched only on `loop`'s thread (`afterStop`
/// once the loop has stopped; `loop.assertInLoop()` checks it at each entry point in debug builds).
/// The loop delivers the socket's events and deadline ticks there, and handler and stream tasks
/// run there too (the loop is their executor preference).
final class Connection: EventLoopHandler, @unchecked Sendable {
    private enum State {
        /// Parsing requests; the read source is on whenever the parser needs more bytes.
        case reading
        /// A handler is running. Nothing is read, so a client pipelining requests without
        /// reading responses fills its socket buffers, not our memory.
        case handling
        /// Flushing a response; then reading again, or lingering if the connection is to close.
        case writing(keepAlive: Bool)
        /// Writing a streamed body. Reading is on (up to a bound) only to notice a disconnect.
        case streaming(keepAlive: Bool, chunked: Bool)
        /// The last response is sent and our side shut down; discarding input until the client
        /// closes, so that closing with unread input does not reset the connection and destroy
        /// the response before the client read it.
        case lingering
        case closed
    }

    /// What the read deadline, when set, guards.
    private enum ReadDeadline {
        case idle, head, body, linger
    }

    /// How the response to the current request is to be written.
    private struct Exchange {
        var isHead: Bool
        var keepAlive: Bool
        var isHTTP10: Bool
        /// The request's `Accept-Encoding`, parsed only if the response could be compressed.
        var acceptEncoding: String? = nil
    }

    private static let readChunkBytes = 16 * 1024
    /// While streaming, input is buffered (for the next request) up to this much, then reading stops.
    private static let maxBufferedWhileStreaming = 64 * 1024
    private static let lingerSeconds = 2.0
    private static let continueBytes = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    private let loop: EventLoop
    private let fd: Int32
    private let configuration: HTTPServerConfiguration
    private let router: Router
    private let logger: Logger
    private let onClose: @Sendable (Connection) -> Void

    private var state = State.reading
    private var parser: RequestParser
    private var shuttingDown = false
    /// True while `processRequests` runs, so a response finished synchronously inside it
    /// continues that loop instead of recursing into a new one.
    private var processing = false


    private var output: [UInt8] = []
    private var outputOffset = 0
    private var streamWaiter: CheckedContinuation<Bool, Never>?
    private var handlerTask: Task<Void, Never>?
    private var streamTask: Task<Void, Never>?

    private var readDeadline: UInt64?
    private var readDeadlineKind = ReadDeadline.idle
    private var observedPhase: RequestParser.Phase?
    private var writeDeadline: UInt64?

    init(
        fd: Int32,
        loop: EventLoop,
        remoteAddress: String,
        configuration: HTTPServerConfiguration,
        router: Router,
        logger: Logger,
        onClose: @escaping @Sendable (Connection) -> Void
    ) {
        self.fd = fd
        self.loop = loop
        self.configuration = configuration
        self.router = router
        var logger = logger
        logger[metadataKey: "http.remote"] = "\(remoteAddress)"
        self.logger = logger
        self.onClose = onClose
        parser = RequestParser(configuration: configuration, remoteAddress: remoteAddress)
    }

    // MARK: Lifecycle

    /// On the loop's thread, as soon as the connection is accepted (a shutdown's close is a
    /// job for the loop, so it comes after this).
    func start() {
        loop.assertInLoop()
        loop.register(fd, self)
        resumeReading()
        processRequests()
    }

    /// Server shutdown: close at once if no request is in progress, else after its response.
    /// A streamed response is ended (its stream is no longer consumed).
    func beginShutdown() {
        loop.execute {
            self.shuttingDown = true
            switch self.state {
            case .reading where self.parser.phase != .body, .lingering:
                self.close()
            case .streaming:
                self.streamTask?.cancel()
            case .reading, .handling, .writing, .closed:
                break
            }
        }
    }

    func forceClose() {
        loop.execute { self.close() }
    }

    /// Deadlines are checked on the loop's tick rather than armed per request, which keeps
    /// the per-request cost to reading the clock. It ticks often enough to honour the shortest
    /// timeout to within about a quarter of it.
    static func deadlineCheckInterval(_ configuration: HTTPServerConfiguration) -> Double {
        let shortest = min(configuration.headReadTimeout, configuration.bodyReadTimeout,
                           configuration.idleTimeout, configuration.writeTimeout, lingerSeconds)
        return min(max(shortest / 4, 0.005), 1)
    }

    private func close() {
        if case .closed = state { return }
        state = .closed
        handlerTask?.cancel()
        streamTask?.cancel()
        streamWaiter?.resume(returning: false)
        streamWaiter = nil
        output = []
        outputOffset = 0
        loop.deregister(fd)
        _ = Glibc.close(fd)
        onClose(self)
    }

    // MARK: Reading

    private enum ReceiveResult {
        case data, wouldBlock, endOfStream
    }

    func readable() {
        loop.assertInLoop()
        switch state {
        case .reading:
            guard receive(keep: true) != .endOfStream else { return close() }
            processRequests()
        case .streaming:
            if receive(keep: true) == .endOfStream { return close() }
            if parser.bufferedByteCount >= Self.maxBufferedWhileStreaming { pauseReading() }
        case .lingering:
            if receive(keep: false) == .endOfStream { close() }
        case .handling, .writing, .closed:
            // Reading pauses lazily, when input arrives while it is not wanted: a client that
            // waits for each response never sends any then, and changing the epoll set twice
            // for every request would cost two system calls.
            pauseReading()
        }
    }

    /// One `recv`; end of stream also stands for a failed read (the peer is gone either way).
    private func receive(keep: Bool) -> ReceiveResult {
        withUnsafeTemporaryAllocation(byteCount: Self.readChunkBytes, alignment: 1) { buffer in
            while true {
                let count = recv(fd, buffer.baseAddress, buffer.count, 0)
                if count > 0 {
                    if keep { parser.append(UnsafeRawBufferPointer(rebasing: buffer[..<count])) }
                    return .data
                }
                if count == 0 { return .endOfStream }
                switch errno {
                case EINTR: continue
                case EAGAIN, EWOULDBLOCK: return .wouldBlock
                default: return .endOfStream
                }
            }
        }
    }

    /// Takes requests from the parser until one needs a handler, the parser needs more bytes,
    /// or the connection ends.
    private func processRequests() {
        processing = true
        defer { processing = false }
        while case .reading = state {
            switch parser.next() {
            case .needMore:
                resumeReading()
                updateReadDeadline()
                return
            case .sendContinue:
                _ = write(Self.continueBytes)
            case .request(let request, let keepAlive):
                readDeadline = nil
                observedPhase = nil
                let exchange = Exchange(
                    isHead: request.method == "HEAD",
                    keepAlive: keepAlive,
                    isHTTP10: request.version == "HTTP/1.0",
                    acceptEncoding: request.headers["Accept-Encoding"]
                )
                dispatch(request, exchange)
            case .reject(let rejection):
                readDeadline = nil
                logger.debug("Request refused", metadata: [
                    "http.status": "\(rejection.status)", "http.detail": "\(rejection.detail)",
                ])
                respond(.problem(rejection.status, detail: rejection.detail), Exchange(isHead: false, keepAlive: false, isHTTP10: false))
            }
        }
    }

    /// Sets the read deadline when the parser enters a new phase: the head deadline runs from
    /// the first byte of a head, the body deadline from the end of the head.
    private func updateReadDeadline() {
        let phase = parser.phase
        guard phase != observedPhase else { return }
        observedPhase = phase
        switch phase {
        case .idle: setReadDeadline(configuration.idleTimeout, .idle)
        case .head: setReadDeadline(configuration.headReadTimeout, .head)
        case .body: setReadDeadline(configuration.bodyReadTimeout, .body)
        }
    }

    private func setReadDeadline(_ seconds: Double, _ kind: ReadDeadline) {
        readDeadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1_000_000_000)
        readDeadlineKind = kind
    }

    func tick() {
        loop.assertInLoop()
        let now = DispatchTime.now().uptimeNanoseconds
        if let writeDeadline, now >= writeDeadline {
            logger.debug("Write timed out")
            return close()
        }
        guard let readDeadline, now >= readDeadline else { return }
        self.readDeadline = nil
        switch readDeadlineKind {
        case .idle, .linger:
            close()
        case .head, .body:
            logger.debug("Read timed out", metadata: ["http.phase": "\(readDeadlineKind)"])
            guard case .reading = state else { return close() }
            respond(
                .problem(408, detail: "The request was not received in time."),
                Exchange(isHead: false, keepAlive: false, isHTTP10: false)
            )
        }
    }

    private func pauseReading() {
        want(reading: false)
    }

    private func resumeReading() {
        want(reading: true)
    }

    /// A closed connection wants nothing: its descriptor's number may belong to another by now.
    private func want(reading: Bool? = nil, writing: Bool? = nil) {
        if case .closed = state { return }
        loop.want(fd, reading: reading, writing: writing)
    }

    // MARK: Handling

    private func dispatch(_ request: HTTPRequest, _ exchange: Exchange) {
        state = .handling
        switch router.match(request) {
        case .response(let response):
            respond(response, exchange)
        case .handler(let handler, let parameters):
            handlerTask = Task(executorPreference: loop) {
                let response = await handler(request, parameters)
                self.handlerFinished(response, exchange)
            }
        }
    }

    private func handlerFinished(_ response: HTTPResponse, _ exchange: Exchange) {
        loop.assertInLoop()
        guard case .handling = state else { return }
        handlerTask = nil
        respond(response, exchange)
    }

    // MARK: Responding

    private func respond(_ response: HTTPResponse, _ exchange: Exchange) {
        let keepAlive = exchange.keepAlive && !shuttingDown
        // A final response must have a three-digit status of at least 200.
        let status = (200...999).contains(response.status) ? response.status : 500
        let mayHaveBody = statusAllowsBody(status)
        let connection: String? = keepAlive ? (exchange.isHTTP10 ? "keep-alive" : nil) : "close"
        var server = ServerFields(date: loop.httpDateNow())

        switch response.body {
        case .bytes(var body):
            // A HEAD response is compressed too, so that its Content-Length is GET's.
            if mayHaveBody && ResponseCompression.isCandidate(headers: response.headers, bodyCount: body.count) {
                server.variesWithAcceptEncoding = true
                if ResponseCompression.acceptsGzip(exchange.acceptEncoding), let gzipped = Gzip.compress(body) {
                    body = gzipped
                    server.gzipped = true
                }
            }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(256 + body.count)
            appendResponseHead(status: status, headers: response.headers, framing: mayHaveBody ? .length(body.count) : .none,
                               connection: connection, server: server, to: &bytes)
            // Head and body in one write: two small writes would meet Nagle and delayed ACK.
            if mayHaveBody && !exchange.isHead { bytes += body }
            state = .writing(keepAlive: keepAlive)
            if write(bytes) { finishResponse(keepAlive: keepAlive) }

        case .stream(let stream):
            // HTTP/1.0 has no chunked coding: the body then ends when the connection closes.
            let chunked = !exchange.isHTTP10
            let keepAlive = keepAlive && chunked
            server.streamed = true
            var bytes: [UInt8] = []
            appendResponseHead(status: status, headers: response.headers,
                               framing: mayHaveBody && chunked ? .chunked : .none,
                               connection: keepAlive ? connection : "close", server: server, to: &bytes)
            guard mayHaveBody && !exchange.isHead else {
                state = .writing(keepAlive: keepAlive)
                if write(bytes) { finishResponse(keepAlive: keepAlive) }
                return
            }
            state = .streaming(keepAlive: keepAlive, chunked: chunked)
            _ = write(bytes)
            startStreaming(stream, chunked: chunked)
        }
    }

    private func finishResponse(keepAlive: Bool) {
        guard keepAlive && !shuttingDown else { return startLingering() }
        state = .reading
        if !processing { processRequests() }
    }

    private func startLingering() {
        guard !shuttingDown else { return close() }
        state = .lingering
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
        setReadDeadline(Self.lingerSeconds, .linger)
        resumeReading()
    }

    // MARK: Streaming

    private func startStreaming(_ stream: AsyncStream<[UInt8]>, chunked: Bool) {
        guard case .streaming = state else { return }
        resumeReading()
        streamTask = Task(executorPreference: loop) {
            // An empty chunk would end the body.
            for await element in stream where !element.isEmpty {
                guard await self.writeStreamElement(element, chunked: chunked) else { return }
            }
            self.endStream()
        }
    }

    /// Writes one element and waits until the kernel has taken it, so a slow reader slows the
    /// producer down instead of growing our output buffer. False once the connection is gone.
    private func writeStreamElement(_ element: [UInt8], chunked: Bool) async -> Bool {
        loop.assertInLoop()
        guard case .streaming = state else { return false }
        var bytes = element
        if chunked {
            bytes = Array(String(element.count, radix: 16).utf8) + [13, 10]
            bytes += element
            bytes += [13, 10]
        }
        if write(bytes) { return true }
        if case .closed = state { return false }
        return await withCheckedContinuation { streamWaiter = $0 }
    }

    private func endStream() {
        loop.assertInLoop()
        guard case .streaming(let keepAlive, let chunked) = state else { return }
        streamTask = nil
        state = .writing(keepAlive: keepAlive)
        if write(chunked ? Array("0\r\n\r\n".utf8) : []) { finishResponse(keepAlive: keepAlive) }
    }

    // MARK: Writing

    /// Queues `bytes` behind any pending output and writes what the socket takes. True when
    /// everything has been written; otherwise the write source finishes the job (or the
    /// connection was closed on an error).
    private func write(_ bytes: [UInt8]) -> Bool {
        if case .closed = state { return false }
        if outputOffset == output.count {
            output = bytes
            outputOffset = 0
        } else {
            output += bytes
        }
        return flush()
    }

    private func flush() -> Bool {
        var progressed = false
        while outputOffset < output.count {
            let sent = output.withUnsafeBytes { raw in
                send(fd, raw.baseAddress.map { $0 + outputOffset }, raw.count - outputOffset, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                outputOffset += sent
                progressed = true
                continue
            }
            switch errno {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                // The client is not reading fast enough; the write timeout runs from the last progress.
                if progressed || writeDeadline == nil {
                    writeDeadline = DispatchTime.now().uptimeNanoseconds + UInt64(configuration.writeTimeout * 1_000_000_000)
                }
                awaitWritable()
                return false
            default:
                logger.debug("Write failed", metadata: ["error": "\(errorText(errno))"])
                close()
                return false
            }
        }
        output = []
        outputOffset = 0
        writeDeadline = nil
        pauseWriting()
        return true
    }

    func writable() {
        loop.assertInLoop()
        guard flush() else { return }
        switch state {
        case .writing(let keepAlive):
            finishResponse(keepAlive: keepAlive)
        case .streaming:
            streamWaiter?.resume(returning: true)
            streamWaiter = nil
        case .reading, .handling, .lingering, .closed:
            break
        }
    }

    /// Write events are wanted only while a write is blocked, since a writable socket would
    /// otherwise report itself continuously.
    private func awaitWritable() {
        want(writing: true)
    }

    private func pauseWriting() {
        want(writing: false)
    }
}
