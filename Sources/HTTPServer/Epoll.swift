import Glibc

/// The Linux epoll calls. Glibc's Swift module leaves out <sys/epoll.h> and this package has no
/// C shim for it, so the three functions are looked up once in the C library and called through
/// C function pointers, and `epoll_event` is laid out by hand.
enum Epoll {
    static let readable: UInt32 = 0x001
    static let writable: UInt32 = 0x004
    static let error: UInt32 = 0x008
    static let hangUp: UInt32 = 0x010
    /// Of the epoll sets watching one descriptor, only one is woken per event (Linux 4.5).
    static let exclusive: UInt32 = 1 << 28

    enum Operation: Int32 {
        case add = 1, delete = 2, modify = 3
    }

    /// `struct epoll_event` is packed on x86-64 and naturally aligned elsewhere.
    #if arch(x86_64)
    static let eventSize = 12
    private static let dataOffset = 4
    #else
    static let eventSize = 16
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
    static func create() -> Int32? {
        guard let functions else {
            errno = ENOSYS
            return nil
        }
        let fd = functions.create(Int32(O_CLOEXEC))
        return fd >= 0 ? fd : nil
    }

    @discardableResult
    static func control(_ epoll: Int32, _ operation: Operation, _ fd: Int32, events: UInt32) -> Int32 {
        guard let functions else { return -1 }
        return withUnsafeTemporaryAllocation(byteCount: eventSize, alignment: 8) { raw in
            raw.storeBytes(of: events, toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: UInt64(UInt32(bitPattern: fd)), toByteOffset: dataOffset, as: UInt64.self)
            return functions.control(epoll, operation.rawValue, fd, raw.baseAddress)
        }
    }

    /// Waits up to `timeout` ms for events into `buffer` (`eventSize` bytes each); returns how many.
    static func wait(_ epoll: Int32, _ buffer: UnsafeMutableRawBufferPointer, timeout: Int32) -> Int {
        guard let functions else { return -1 }
        return Int(functions.wait(epoll, buffer.baseAddress, Int32(buffer.count / eventSize), timeout))
    }

    /// The events and descriptor of the `index`th event in `buffer`.
    static func event(_ index: Int, in buffer: UnsafeMutableRawBufferPointer) -> (events: UInt32, fd: Int32) {
        let base = index * eventSize
        let events = buffer.loadUnaligned(fromByteOffset: base, as: UInt32.self)
        let data = buffer.loadUnaligned(fromByteOffset: base + dataOffset, as: UInt64.self)
        return (events, Int32(bitPattern: UInt32(truncatingIfNeeded: data)))
    }
}
