import Confinement
import Dispatch
import Epoll
import Glibc
import Synchronization

/// An epoll set of the transfer engine's own, waited on by a thread of its own that hands each
/// batch of ready sockets to `onEvent` inside `queue.sync`: when the engine queue is idle, that
/// runs right on this thread. With a DispatchSource per socket, each event woke libdispatch's event
/// thread, then a worker for the queue, and after the handler the event thread again to re-arm
/// the source (a fifth of fetchd's CPU with 1,000 throttled transfers; Benchmarks/README.md).
///
/// Level-triggered: a socket whose bytes curl left unread is reported again at the next wait,
/// as a re-armed source's was. The batch's handlers all run before that wait.
final class SocketPoller: QueueConfined, @unchecked Sendable {
    // @unchecked: `onEvent`, which is not Sendable, is called only on `queue` (assertOnQueue, in
    // `deliver`). `epoll` and `wakeup` never change; epoll_ctl and write(2) may be called from any
    // thread. The descriptors are closed by the polling thread when it ends (`stop`).
    let epoll: Int32
    /// A pipe: a byte written to `wakeup.write` ends the thread.
    private let wakeup: (read: Int32, write: Int32)
    private let stopped = Atomic<Bool>(false)
    let queue: DispatchQueue
    private let onEvent: (_ events: UInt32, _ data: UInt64) -> Void

    /// The `data` of the wake-up descriptor's events; a socket's `data` never has all bits set.
    private static let wakeupData = UInt64.max
    private static let eventsPerWait = 64

    /// Starts the polling thread; nil, with `errno`, if the descriptors or the thread cannot be had.
    init?(queue: DispatchQueue, onEvent: @escaping (_ events: UInt32, _ data: UInt64) -> Void) {
        guard let epoll = Epoll.create() else { return nil }
        guard let wakeup = Epoll.addWakeupPipe(to: epoll, data: Self.wakeupData) else {
            let code = errno
            close(epoll)
            errno = code
            return nil
        }
        self.epoll = epoll
        self.wakeup = wakeup
        self.queue = queue
        self.onEvent = onEvent
        let status = Epoll.startThread { self.run() }
        guard status == 0 else {
            closeDescriptors()
            errno = status
            return nil
        }
    }

    private func closeDescriptors() {
        close(wakeup.read)
        close(wakeup.write)
        close(epoll)
    }

    /// Ends the polling thread after the batch it may be handling. Callable on the queue: it does
    /// not wait for the thread (which may be waiting for the queue).
    func stop() {
        // Once: the thread closes the pipe when it has read the first byte.
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        var byte: UInt8 = 1
        _ = write(wakeup.write, &byte, 1)
    }

    private func run() {
        let events = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.eventsPerWait * Epoll.eventSize, alignment: 8)
        defer {
            events.deallocate()
            closeDescriptors()
        }
        var stopping = false
        while !stopping {
            let count = Epoll.wait(epoll, events, timeout: -1)
            if count < 0 {
                if errno == EINTR { continue }
                return
            }
            stopping = queue.sync { deliver(count, of: events) }
        }
    }

    /// Hands the first `count` events to `onEvent`, up to the wake-up descriptor's; true if that was among them.
    private func deliver(_ count: Int, of events: UnsafeMutableRawBufferPointer) -> Bool {
        assertOnQueue()
        for index in 0..<count {
            let event = Epoll.eventData(index, in: events)
            if event.data == Self.wakeupData { return true }
            onEvent(event.events, event.data)
        }
        return false
    }
}
