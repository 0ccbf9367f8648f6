import Dispatch
import Glibc
import Synchronization

struct ClientError: Error, CustomStringConvertible {
    var description: String
}

/// A response as read off the wire by `RawClient`.
struct RawResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A blocking TCP client that sends raw bytes and reads responses, for testing the server as
/// a misbehaving client would see it.
///
/// The blocking calls run on `queue` (reads) and `sendQueue` (writes, so that a blocked send
/// does not stop reads), never on the cooperative thread pool the server's handlers need.
/// `@unchecked Sendable`: `buffer` is only touched on `queue`.
final class RawClient: @unchecked Sendable {
    let fd: Int32
    private let queue = DispatchQueue(label: "raw-client")
    private let sendQueue = DispatchQueue(label: "raw-client.send")
    private var buffer: [UInt8] = []

    private init(fd: Int32) {
        self.fd = fd
    }

    /// Connects to `host` (an IPv4 or IPv6 literal); reads give up after `readTimeout` seconds.
    /// A fixed `receiveBuffer` stops the kernel from growing it, to make the server's writes block.
    static func connect(port: Int, host: String = "127.0.0.1", readTimeout: Double = 5, receiveBuffer: Int32? = nil) throws -> RawClient {
        let isIPv6 = host.contains(":")
        let fd = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError(description: "socket: \(errno)") }
        var timeout = timeval(tv_sec: Int(readTimeout), tv_usec: Int((readTimeout - Double(Int(readTimeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var status: Int32
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(port).bigEndian
            inet_pton(AF_INET6, host, &address.sin6_addr)
            status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard status == 0 else {
            let code = errno
            Glibc.close(fd)
            throw ClientError(description: "connect: \(String(cString: strerror(code)))")
        }
        return RawClient(fd: fd)
    }

    deinit {
        Glibc.close(fd)
    }

    func send(_ text: String) async throws {
        try await send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) async throws {
        try await on(sendQueue) { try self.sendAll(bytes) }
    }

    /// Starts sending `bytes` on `sendQueue` now, not from a task: with the cooperative pool
    /// busy (other suites block its threads for seconds on a loaded machine) a task may start
    /// so late that the server, waiting for the rest of a head, rightly answers 408.
    func startSending(_ bytes: [UInt8]) -> PendingSend {
        let pending = PendingSend()
        sendQueue.async { pending.finish(Result { try self.sendAll(bytes) }) }
        return pending
    }

    private func sendAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw ClientError(description: "send: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    /// Sends without blocking (and without waiting for a read in progress on `queue`); returns
    /// how many bytes the kernel took, 0 when its buffers are full.
    func sendWithoutBlocking(_ bytes: [UInt8]) -> Int {
        guard !bytes.isEmpty else { return 0 }
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        return max(sent, 0)
    }

    /// Reads one response. `head` says the request was HEAD (a body is then not expected).
    func readResponse(head: Bool = false) async throws -> RawResponse {
        try await onQueue { try self.readResponseOnQueue(head: head) }
    }

    /// Reads `count` responses in one job on `queue`, so that reading them does not wait for
    /// the cooperative pool between responses.
    func readResponses(_ count: Int) async throws -> [RawResponse] {
        try await onQueue { try (0..<count).map { _ in try self.readResponseOnQueue(head: false) } }
    }

    /// Reads until `marker` has arrived; returns everything up to and including it.
    func readUntil(_ marker: String) async throws -> String {
        try await onQueue {
            let needle = Array(marker.utf8)
            while true {
                if let range = self.buffer.firstRange(of: needle) {
                    defer { self.buffer.removeSubrange(..<range.upperBound) }
                    return String(decoding: self.buffer[..<range.upperBound], as: UTF8.self)
                }
                guard try self.fill() else { throw ClientError(description: "closed before \(marker)") }
            }
        }
    }

    /// Reads until the server closes; throws if that does not happen within the read timeout.
    func readToEnd() async throws -> [UInt8] {
        try await onQueue {
            while try self.fill() {}
            defer { self.buffer = [] }
            return self.buffer
        }
    }

    /// True if the server closed the connection (end of stream or reset) within the read
    /// timeout; anything received meanwhile is kept for later reads.
    func isClosedByServer() async -> Bool {
        await onQueue {
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, $0.count, 0) }
                if count > 0 {
                    self.buffer += chunk[..<count]
                    continue
                }
                return count == 0 || errno == ECONNRESET
            }
        }
    }

    func shutdownWrite() {
        Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    // MARK: On the queue

    private func onQueue<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await on(queue, work)
    }

    private func on<T: Sendable>(_ queue: DispatchQueue, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    private func onQueue<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }

    /// Reads more bytes into `buffer`; false at end of stream.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            let code = errno
            if code == ECONNRESET { return false }
            throw ClientError(description: "recv: \(String(cString: strerror(code)))")
        }
        buffer += chunk[..<count]
        return count > 0
    }

    private func readLine() throws -> String {
        while true {
            if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[..<end]
                buffer.removeSubrange(...end)
                return String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
            }
            guard try fill() else { throw ClientError(description: "connection closed mid-line") }
        }
    }

    private func readBytes(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw ClientError(description: "connection closed mid-body") }
        }
        defer { buffer.removeSubrange(..<count) }
        return Array(buffer[..<count])
    }

    private func readResponseOnQueue(head: Bool) throws -> RawResponse {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0] == "HTTP/1.1", let status = Int(parts[1]) else {
            throw ClientError(description: "bad status line: \(statusLine)")
        }
        var headers: [(name: String, value: String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw ClientError(description: "bad header: \(line)") }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: " ")))
        }
        var response = RawResponse(status: status, headers: headers, body: [])
        if head || (100..<200).contains(status) || status == 204 || status == 304 {
            return response
        }
        if let length = response.header("Content-Length").flatMap(Int.init) {
            response.body = try readBytes(length)
        } else if response.header("Transfer-Encoding") == "chunked" {
            while true {
                let sizeLine = try readLine()
                guard let size = Int(sizeLine.prefix { $0 != ";" }, radix: 16) else {
                    throw ClientError(description: "bad chunk size: \(sizeLine)")
                }
                if size == 0 {
                    while try !readLine().isEmpty {}
                    break
                }
                response.body += try readBytes(size)
                _ = try readLine()
            }
        } else {
            while try fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }
}

/// A send started with `startSending`; `finished()` returns when all was sent, or throws.
final class PendingSend: Sendable {
    private let outcome = Mutex<Result<Void, any Error>?>(nil)
    private let done = Gate()

    fileprivate func finish(_ result: Result<Void, any Error>) {
        outcome.withLock { $0 = result }
        done.open()
    }

    func finished() async throws {
        await done.wait()
        try outcome.withLock { $0 }?.get()
    }
}

extension StringProtocol {
    func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}
