import Glibc

/// The POSIX socket calls the server makes, with errno turned into values.
enum Socket {
    /// Creates non-blocking listening sockets for every address `host` resolves to, all on the
    /// same port (the one the first bind picked when `port` is 0).
    static func listen(host: String, port: Int) throws -> (descriptors: [Int32], port: Int) {
        guard (0...65535).contains(port) else { throw HTTPServerError("invalid port: \(port)") }
        let addresses = try resolve(host: host, port: port)
        var descriptors: [Int32] = []
        var boundPort = port
        do {
            for (index, address) in addresses.enumerated() {
                var address = address
                if index > 0 { address.setPort(boundPort) }
                do {
                    let fd = try bindAndListen(address, dualStackAllowed: addresses.count == 1)
                    descriptors.append(fd)
                    boundPort = localPort(of: fd) ?? boundPort
                } catch let error as BindError where !descriptors.isEmpty && error.isUnavailableAddress {
                    // e.g. "localhost" also resolves to ::1 on a host with IPv6 disabled.
                    continue
                }
            }
        } catch let error as BindError {
            descriptors.forEach { _ = Glibc.close($0) }
            throw HTTPServerError(error.message)
        }
        return (descriptors, boundPort)
    }

    /// Accepts one pending connection as a non-blocking socket with TCP_NODELAY set.
    static func accept(_ listener: Int32) -> AcceptResult {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listener, $0, &length) }
        }
        guard fd >= 0 else { return .failed(errno) }
        // Glibc's accept4 is not visible to Swift; set the flags it would have set.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        // Responses are written whole; without this, Nagle plus delayed ACK can stall them 40 ms.
        var on: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        return .accepted(fd, remoteAddress: SocketAddress(storage).description)
    }

    enum AcceptResult {
        case accepted(Int32, remoteAddress: String)
        case failed(Int32)
    }

    private struct BindError: Error {
        var message: String
        var code: Int32
        var isUnavailableAddress: Bool { code == EADDRNOTAVAIL || code == EAFNOSUPPORT }
    }

    private static func resolve(host: String, port: Int) throws -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw HTTPServerError("cannot resolve host \"\(host)\": \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let address = SocketAddress(current.pointee), !addresses.contains(address) {
                addresses.append(address)
            }
            entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw HTTPServerError("cannot resolve host \"\(host)\": no address") }
        return addresses
    }

    private static func bindAndListen(_ address: SocketAddress, dualStackAllowed: Bool) throws -> Int32 {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            let code = errno
            throw BindError(message: "cannot create socket for \(address): \(errorText(code))", code: code)
        }
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        if address.family == AF_INET6 && !dualStackAllowed {
            // Binding both 127.0.0.1 and ::1 (or 0.0.0.0 and ::) on one port needs v6-only sockets.
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = address.withSockaddr { Glibc.bind(fd, $0, $1) }
        guard bound == 0, Glibc.listen(fd, SOMAXCONN) == 0 else {
            let code = errno
            _ = Glibc.close(fd)
            let message = switch code {
            case EADDRINUSE: "address already in use: \(address)"
            case EACCES: "permission denied binding \(address)"
            case EADDRNOTAVAIL: "address not available: \(address)"
            default: "cannot listen on \(address): \(errorText(code))"
            }
            throw BindError(message: message, code: code)
        }
        return fd
    }

    private static func localPort(of fd: Int32) -> Int? {
        localAddress(of: fd)?.port
    }

    /// The address a socket is bound to.
    static func localAddress(of fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return status == 0 ? SocketAddress(storage) : nil
    }
}

func errorText(_ code: Int32) -> String {
    String(cString: strerror(code))
}

/// An IPv4 or IPv6 socket address.
struct SocketAddress: Equatable, CustomStringConvertible {
    private var storage: sockaddr_storage

    init(_ storage: sockaddr_storage) {
        self.storage = storage
    }

    init?(_ info: addrinfo) {
        guard let address = info.ai_addr, info.ai_family == AF_INET || info.ai_family == AF_INET6 else { return nil }
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(info.ai_addrlen)))
        }
        self.storage = storage
    }

    var family: Int32 { Int32(storage.ss_family) }

    var port: Int {
        withUnsafeBytes(of: storage) { raw in
            family == AF_INET6
                ? Int(UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port))
                : Int(UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port))
        }
    }

    /// 127.0.0.0/8, ::1, or an IPv4-mapped 127.0.0.0/8.
    var isLoopback: Bool {
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET {
                return UInt32(bigEndian: raw.load(as: sockaddr_in.self).sin_addr.s_addr) >> 24 == 127
            }
            let bytes = withUnsafeBytes(of: raw.load(as: sockaddr_in6.self).sin6_addr) { Array($0) }
            let mapped: [UInt8] = Array(repeating: 0, count: 10) + [0xff, 0xff]
            return bytes == Array(repeating: 0, count: 15) + [1] || (Array(bytes[..<12]) == mapped && bytes[12] == 127)
        }
    }

    mutating func setPort(_ port: Int) {
        // sin_port and sin6_port both sit right after the 16-bit address family.
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.storeBytes(of: UInt16(port).bigEndian, toByteOffset: 2, as: UInt16.self)
        }
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        let length = family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size
        return withUnsafePointer(to: storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(length)) }
        }
    }

    /// "127.0.0.1:8080" or "[::1]:8080".
    var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let host: String = withUnsafeBytes(of: storage) { raw in
            var ok = false
            if family == AF_INET6 {
                var address = raw.load(as: sockaddr_in6.self).sin6_addr
                ok = inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil
            } else if family == AF_INET {
                var address = raw.load(as: sockaddr_in.self).sin_addr
                ok = inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil
            }
            return ok ? String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        }
        return family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    static func == (a: SocketAddress, b: SocketAddress) -> Bool {
        a.description == b.description
    }
}
