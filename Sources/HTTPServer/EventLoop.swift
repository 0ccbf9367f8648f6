import Dispatch
import Epoll
import Glibc
import Synchronization

/// What an `EventLoop` calls for a registered descriptor, always on the loop's thread.
protocol EventLoopHandler: AnyObject {
    func readable()
    func writable()
    /// Called every `EventLoop.tickInterval` while registered (deadlines are checked here).
    func tick()
}

/// One thread running epoll for the descriptors registered with it, and the jobs (and Swift
/// tasks: it is their executor) sent to it.
///
/// Everything a connection does happens on its loop's thread: its I/O, its deadline checks,
/// its handler. The server runs one loop per core, each accepting its own connections, so a
/// request is read, handled and answered without waking another thread.
///
/// Level-triggered: a descriptor is in the epoll set only while it wants an event, so a hung-up
/// socket whose connection is busy does not make `epoll_wait` return at once again and again.
///
/// `@unchecked Sendable`: `handlers`, `interests`, `httpDate` and `stopRequested` are touched only on
/// the loop's thread, and once it has stopped only on `afterStop`, which takes over from it
/// (`assertInLoop` checks that in debug builds); the jobs sent from other threads are guarded by
/// the `Mutex` `inbox`.
final class EventLoop: TaskExecutor, @unchecked Sendable {
    private struct Inbox {
        var jobs: [@Sendable () -> Void] = []
        /// The loop is in (or about to enter) `epoll_wait` and must be woken for a new job.
        var sleeping = false
        /// Stopped: jobs go to `afterStop`.
        var stopped = false
    }

    private struct Interest: Equatable {
        var reading = false
        var writing = false
    }

    let tickInterval: Double
    private let epoll: Int32
    /// A pipe: a byte written to `wakeup.write` ends the loop's `epoll_wait`.
    private let wakeup: (read: Int32, write: Int32)
    private let inbox = Mutex(Inbox())
    /// Jobs that arrive once the loop has stopped (a task finishing after the server shut
    /// down) run here, still one at a time.
    private let afterStop = DispatchQueue(label: "fetchd.http.loop.stopped")
    #if DEBUG
    /// Set on `afterStop` only, so `assertInLoop` knows it.
    private let afterStopKey = DispatchSpecificKey<Bool>()
    #endif
    private var handlers: [Int32: EventLoopHandler] = [:]
    private var interests: [Int32: Interest] = [:]
    /// The `Date` of the responses written on this loop; each loop keeps its own, so no lock is taken.
    private var httpDate = HTTPDateCache()
    /// Set by the job `stop()` sends; the loop then hands what is left to `afterStop`.
    private var stopRequested = false

    init(tickInterval: Double) throws {
        self.tickInterval = tickInterval
        guard let epoll = Epoll.create() else {
            throw HTTPServerError("cannot create an event loop: \(errorText(errno))")
        }
        guard let wakeup = Epoll.addWakeupPipe(to: epoll) else {
            let code = errno
            _ = Glibc.close(epoll)
            throw HTTPServerError("cannot create an event loop: \(errorText(code))")
        }
        self.epoll = epoll
        self.wakeup = wakeup
        #if DEBUG
        afterStop.setSpecific(key: afterStopKey, value: true)
        #endif
    }

    /// Starts the loop's thread, which keeps the loop alive until it stops. If that fails, the
    /// loop's descriptors are closed and it must not be used.
    func start() throws {
        let status = Epoll.startThread { self.run() }
        guard status == 0 else {
            closeDescriptors()
            throw HTTPServerError("cannot start an event loop thread: \(errorText(status))")
        }
    }

    /// Ends the loop once the jobs already sent have run; later jobs run on a serial queue.
    func stop() {
        execute { self.stopRequested = true }
    }

    /// Runs `job` on the loop's thread, after the events and jobs already waiting.
    func execute(_ job: @escaping @Sendable () -> Void) {
        enum Delivery { case queued, wake, afterStop }
        let delivery = inbox.withLock { inbox -> Delivery in
            if inbox.stopped { return .afterStop }
            inbox.jobs.append(job)
            guard inbox.sleeping else { return .queued }
            inbox.sleeping = false
            return .wake
        }
        switch delivery {
        case .queued: break
        case .wake:
            var byte: UInt8 = 1
            _ = Glibc.write(wakeup.write, &byte, 1)
        case .afterStop: afterStop.async(execute: job)
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    // MARK: On the loop's thread

    /// Checks, in debug builds, that the caller runs where the loop's state may be used: on the
    /// loop's thread (found by `current`), or on `afterStop` once the loop has stopped.
    func assertInLoop() {
        #if DEBUG
        let onLoopThread = pthread_getspecific(Self.current) == Unmanaged.passUnretained(self).toOpaque()
        precondition(onLoopThread || DispatchQueue.getSpecific(key: afterStopKey) == true,
                     "an event loop's state was used off its thread")
        #endif
    }

    /// The `Date` header's value for a response written now.
    func httpDateNow() -> String {
        assertInLoop()
        return httpDate.current()
    }

    /// Registers `fd` wanting no events yet.
    func register(_ fd: Int32, _ handler: EventLoopHandler) {
        assertInLoop()
        handlers[fd] = handler
        interests[fd] = Interest()
    }

    /// Registers a listening socket on several loops at once: each connection wakes one of them.
    func registerExclusively(_ fd: Int32, _ handler: EventLoopHandler) {
        assertInLoop()
        handlers[fd] = handler
        interests[fd] = Interest(reading: true)
        Epoll.control(epoll, .add, fd, events: Epoll.readable | Epoll.exclusive)
    }

    /// Changes which events a registered `fd` wants; nil leaves that one as it is.
    func want(_ fd: Int32, reading: Bool? = nil, writing: Bool? = nil) {
        assertInLoop()
        guard let old = interests[fd] else { return }
        let new = Interest(reading: reading ?? old.reading, writing: writing ?? old.writing)
        guard new != old else { return }
        interests[fd] = new
        let events = (new.reading ? Epoll.readable : 0) | (new.writing ? Epoll.writable : 0)
        let operation: Epoll.Operation = events == 0 ? .delete : old.reading || old.writing ? .modify : .add
        Epoll.control(epoll, operation, fd, events: events)
    }

    func deregister(_ fd: Int32) {
        want(fd, reading: false, writing: false)
        handlers[fd] = nil
        interests[fd] = nil
    }

    // MARK: The loop

    /// The loop whose thread this is, if any (set once by `run`, never cleared: the thread ends with it).
    private static let current: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Runs `job` on the calling thread's loop once the jobs already queued there have run (the
    /// handlers started by its last `epoll_wait`), or at once off a loop. See `HTTPServer.afterLoopTurn`.
    static func afterTurn(_ job: @escaping @Sendable () -> Void) {
        guard let loop = pthread_getspecific(current) else { return job() }
        Unmanaged<EventLoop>.fromOpaque(loop).takeUnretainedValue().execute(job)
    }

    private func run() {
        // Unretained: `start` holds the loop for as long as this thread runs.
        pthread_setspecific(Self.current, Unmanaged.passUnretained(self).toOpaque())
        let events = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * Epoll.eventSize, alignment: 8)
        defer { events.deallocate() }
        var nextTick = DispatchTime.now().uptimeNanoseconds + nanoseconds(tickInterval)
        while true {
            let jobs = inbox.withLock { inbox in
                defer { inbox.jobs = [] }
                return inbox.jobs
            }
            for (index, job) in jobs.enumerated() {
                job()
                if stopRequested { return finish(leftOver: jobs[(index + 1)...]) }
            }

            let now = DispatchTime.now().uptimeNanoseconds
            if now >= nextTick {
                handlers.values.forEach { $0.tick() }
                nextTick = now + nanoseconds(tickInterval)
            }
            let sleep = inbox.withLock { inbox in
                inbox.sleeping = inbox.jobs.isEmpty
                return inbox.sleeping
            }
            let timeout = sleep ? Int32(min((nextTick - min(now, nextTick)) / 1_000_000 + 1, 1000)) : 0
            let count = Epoll.wait(epoll, events, timeout: timeout)
            inbox.withLock { $0.sleeping = false }
            for index in 0..<max(count, 0) {
                dispatchEvent(Epoll.event(index, in: events))
            }
        }
    }

    /// From now on jobs run on `afterStop`, those already sent first: handed over under the
    /// lock, so that none sent later can overtake them.
    private func finish(leftOver: ArraySlice<@Sendable () -> Void>) {
        handlers = [:]
        interests = [:]
        inbox.withLock { inbox in
            inbox.stopped = true
            (leftOver + inbox.jobs).forEach { afterStop.async(execute: $0) }
            inbox.jobs = []
        }
        closeDescriptors()
    }

    private func closeDescriptors() {
        _ = Glibc.close(epoll)
        _ = Glibc.close(wakeup.read)
        _ = Glibc.close(wakeup.write)
    }

    private func dispatchEvent(_ event: (events: UInt32, fd: Int32)) {
        let fd = event.fd
        if fd == wakeup.read {
            withUnsafeTemporaryAllocation(byteCount: 64, alignment: 1) { buffer in
                while Glibc.read(wakeup.read, buffer.baseAddress, buffer.count) > 0 {}
            }
            return
        }
        let failed = event.events & (Epoll.hangUp | Epoll.error) != 0
        // A handler may deregister (and close) its descriptor in the first call; the second
        // then must not reach a handler registered meanwhile under the same number.
        guard let handler = handlers[fd] else { return }
        if event.events & Epoll.readable != 0 || (failed && interests[fd]?.reading == true) {
            handler.readable()
        }
        guard handlers[fd] === handler else { return }
        if event.events & Epoll.writable != 0 || (failed && interests[fd]?.writing == true) {
            handler.writable()
        }
    }
}

private func nanoseconds(_ seconds: Double) -> UInt64 {
    UInt64(seconds * 1_000_000_000)
}
