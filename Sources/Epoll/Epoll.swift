import Glibc

/// The Linux epoll calls, for the HTTP server's event loops and the transfer engine's sockets.
/// Glibc's Swift module leaves out <sys/epoll.h> and this package has no C shim for it, so the
/// three functions are looked up once in the C library and called through C function pointers,
/// and `epoll_event` is laid out by hand.
public enum Epoll {
    public static let readable: UInt32 = 0x001
    public static let writable: UInt32 = 0x004
    public static let error: UInt32 = 0x008
    public static let hangUp: UInt32 = 0x010
    /// Of the epoll sets watching one descriptor, only one is woken per event (Linux 4.5).
    public static let exclusive: UInt32 = 1 << 28

    public enum Operation: Int32 {
        case add = 1, delete = 2, modify = 3
    }

    /// `struct epoll_event` is packed on x86-64 and naturally aligned elsewhere.
    #if arch(x86_64)
    public static let eventSize = 12
    private static let dataOffset = 4
    #else
    public static let eventSize = 16
    private static let dataOffset = 8
    #endif

    private typealias Create = @convention(c) (Int32) -> Int32
    private typealias Control = @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
    private typealias Wait = @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32

    private struct Functions {
        let create: Create
        let control: Control
        let wait: Wait
    }

    private static let functions: Functions? = {
        guard let create = dlsym(nil, "epoll_create1"),
              let control = dlsym(nil, "epoll_ctl"),
              let wait = dlsym(nil, "epoll_wait")
        else { return nil }
        return Functions(
            create: unsafeBitCast(create, to: Create.self),
            control: unsafeBitCast(control, to: Control.self),
            wait: unsafeBitCast(wait, to: Wait.self)
        )
    }()

    /// A new epoll descriptor (close-on-exec), or nil with `errno` set.
    public static func create() -> Int32? {
        guard let functions else {
            errno = ENOSYS
            return nil
        }
        let fd = functions.create(Int32(O_CLOEXEC))
        return fd >= 0 ? fd : nil
    }

    /// `data` comes back with each event of `fd` (`eventData`); by default, `fd` itself.
    @discardableResult
    public static func control(_ epoll: Int32, _ operation: Operation, _ fd: Int32, events: UInt32, data: UInt64? = nil) -> Int32 {
        guard let functions else { return -1 }
        return withUnsafeTemporaryAllocation(byteCount: eventSize, alignment: 8) { raw in
            raw.storeBytes(of: events, toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: data ?? UInt64(UInt32(bitPattern: fd)), toByteOffset: dataOffset, as: UInt64.self)
            return functions.control(epoll, operation.rawValue, fd, raw.baseAddress)
        }
    }

    /// Waits up to `timeout` ms for events into `buffer` (`eventSize` bytes each); returns how many.
    public static func wait(_ epoll: Int32, _ buffer: UnsafeMutableRawBufferPointer, timeout: Int32) -> Int {
        guard let functions else { return -1 }
        return Int(functions.wait(epoll, buffer.baseAddress, Int32(buffer.count / eventSize), timeout))
    }

    /// The events and descriptor of the `index`th event in `buffer`, for a descriptor added
    /// without `data`.
    public static func event(_ index: Int, in buffer: UnsafeMutableRawBufferPointer) -> (events: UInt32, fd: Int32) {
        let event = eventData(index, in: buffer)
        return (event.events, Int32(bitPattern: UInt32(truncatingIfNeeded: event.data)))
    }

    /// The events and `data` of the `index`th event in `buffer`.
    public static func eventData(_ index: Int, in buffer: UnsafeMutableRawBufferPointer) -> (events: UInt32, data: UInt64) {
        let base = index * eventSize
        return (buffer.loadUnaligned(fromByteOffset: base, as: UInt32.self),
                buffer.loadUnaligned(fromByteOffset: base + dataOffset, as: UInt64.self))
    }

    /// A pipe (both ends non-blocking and close-on-exec) whose read end is in `epoll`, with
    /// `data`: a byte written to `write` ends the set's wait. Nil, with `errno`, on failure.
    public static func addWakeupPipe(to epoll: Int32, data: UInt64? = nil) -> (read: Int32, write: Int32)? {
        var pipe: [Int32] = [-1, -1]
        guard Glibc.pipe(&pipe) == 0 else { return nil }
        for fd in pipe {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        guard control(epoll, .add, pipe[0], events: readable, data: data) == 0 else {
            let code = errno
            for fd in pipe { close(fd) }
            errno = code
            return nil
        }
        return (pipe[0], pipe[1])
    }

    /// Starts a detached thread that runs `body` (a loop that waits on an epoll set) and then
    /// ends; returns pthread_create's status, 0 when the thread started.
    public static func startThread(_ body: @escaping @Sendable () -> Void) -> Int32 {
        final class Body {
            let run: @Sendable () -> Void
            init(_ run: @escaping @Sendable () -> Void) { self.run = run }
        }
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            guard let context else { return nil }
            Unmanaged<Body>.fromOpaque(context).takeRetainedValue().run()
            return nil
        }, context)
        if status == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Body>.fromOpaque(context).release()
        }
        return status
    }
}
