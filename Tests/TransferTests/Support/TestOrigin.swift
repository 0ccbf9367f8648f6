import Foundation
import Synchronization

/// A request as the test origin received it.
struct OriginRequest: Sendable {
    var method: String
    var path: String
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// What the test origin answers, and how it misbehaves while doing so.
struct OriginResponse: Sendable {
    enum Framing: Sendable {
        /// With Content-Length; the connection stays open for the next request.
        case contentLength
        /// No Content-Length: the body ends when the origin closes the connection.
        case closeDelimited
    }

    enum Behaviour: Sendable {
        case normal
        /// Send this many body bytes, then reset the connection (RST).
        case resetAfter(Int)
        /// Send this many body bytes, then send nothing until the client goes away.
        case stallAfter(Int)
        /// Send nothing at all, not even the head, until the client goes away.
        case silence
        /// Send the whole response (keep-alive, by its Content-Length), then close the connection
        /// once the client has had a moment to put it in its cache.
        case closeWhenIdle
    }

    var status: Int = 200
    var headers: [(String, String)] = []
    var body: [UInt8] = []
    var framing: Framing = .contentLength
    var behaviour: Behaviour = .normal

    static func redirect(to location: String, status: Int = 302) -> OriginResponse {
        OriginResponse(status: status, headers: [("Location", location)], body: Array("moved".utf8))
    }

    /// Serves `body` as a resource with an ETag, honouring `Range: bytes=N-` and `If-Range`
    /// unless `honourRange` is false.
    static func resource(_ body: [UInt8], etag: String, for request: OriginRequest,
                         honourRange: Bool = true) -> OriginResponse {
        var response = OriginResponse(headers: [("ETag", etag), ("Accept-Ranges", "bytes")], body: body)
        guard honourRange, let range = request.header("Range"), range.hasPrefix("bytes="),
              request.header("If-Range").map({ $0 == etag }) ?? true
        else { return response }
        let bounds = range.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let start = Int(bounds[0]) else { return response }
        let end = bounds[1].isEmpty ? body.count - 1 : min(Int(bounds[1]) ?? body.count - 1, body.count - 1)
        guard start < body.count, start <= end else {
            response.status = 416
            response.headers.append(("Content-Range", "bytes */\(body.count)"))
            response.body = Array("range not satisfiable".utf8)
            return response
        }
        response.status = 206
        response.headers.append(("Content-Range", "bytes \(start)-\(end)/\(body.count)"))
        response.body = Array(body[start...end])
        return response
    }
}

/// A small HTTP/1.1 origin on 127.0.0.1 for tests: POSIX sockets, a thread per connection,
/// keep-alive, and misbehaviour on request. It counts connections and body bytes served and
/// records every request.
final class TestOrigin: Sendable {
    let port: Int
    private let listener: Int32
    private let handler: @Sendable (OriginRequest) -> OriginResponse
    private let connections = Atomic<Int>(0)
    private let openConnections = Atomic<Int>(0)
    private let bodyBytes = Atomic<Int>(0)
    private let activeResponses = Atomic<Int>(0)
    private let mostActiveResponses = Atomic<Int>(0)
    private let received = Mutex<[OriginRequest]>([])

    init(handler: @escaping @Sendable (OriginRequest) -> OriginResponse) throws {
        self.handler = handler
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 512) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    var connectionsAccepted: Int { connections.load(ordering: .sequentiallyConsistent) }
    /// Connections the client has not closed yet.
    var connectionsOpen: Int { openConnections.load(ordering: .sequentiallyConsistent) }
    var bodyBytesServed: Int { bodyBytes.load(ordering: .sequentiallyConsistent) }
    /// The most responses ever being sent at the same time.
    var mostConcurrentResponses: Int { mostActiveResponses.load(ordering: .sequentiallyConsistent) }
    var requests: [OriginRequest] { received.withLock { $0 } }

    /// Stops accepting; connections in progress end when their clients go away.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                close(listener)
                return
            }
            connections.add(1, ordering: .sequentiallyConsistent)
            openConnections.add(1, ordering: .sequentiallyConsistent)
            let thread = Thread { [self] in serve(client) }
            thread.start()
        }
    }

    private func serve(_ client: Int32) {
        var pending: [UInt8] = []
        defer {
            close(client)
            openConnections.subtract(1, ordering: .sequentiallyConsistent)
        }
        while let request = readRequest(client, &pending) {
            received.withLock { $0.append(request) }
            let active = activeResponses.add(1, ordering: .sequentiallyConsistent).newValue
            mostActiveResponses.max(active, ordering: .sequentiallyConsistent)
            let response = handler(request)
            let keepOpen = send(response, to: client)
            activeResponses.subtract(1, ordering: .sequentiallyConsistent)
            guard keepOpen else { return }
        }
    }

    /// Sends the response; false when the connection must end after it.
    private func send(_ response: OriginResponse, to client: Int32) -> Bool {
        if case .silence = response.behaviour {
            waitForClientToLeave(client)
            return false
        }
        var head = "HTTP/1.1 \(response.status) Test\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        if case .contentLength = response.framing {
            head += "Content-Length: \(response.body.count)\r\n"
        } else {
            head += "Connection: close\r\n"
        }
        head += "\r\n"
        guard write(Array(head.utf8), to: client) else { return false }

        switch response.behaviour {
        case .normal:
            guard write(response.body, to: client, counted: true) else { return false }
            if case .contentLength = response.framing { return true }
            return false
        case .resetAfter(let count):
            _ = write(Array(response.body.prefix(count)), to: client, counted: true)
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            return false
        case .stallAfter(let count):
            _ = write(Array(response.body.prefix(count)), to: client, counted: true)
            waitForClientToLeave(client)
            return false
        case .silence:
            return false
        case .closeWhenIdle:
            guard write(response.body, to: client, counted: true) else { return false }
            usleep(100_000)
            return false
        }
    }

    private func waitForClientToLeave(_ client: Int32) {
        var byte: UInt8 = 0
        while recv(client, &byte, 1, 0) > 0 {}
    }

    private func write(_ bytes: [UInt8], to client: Int32, counted: Bool = false) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0, errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
            if counted { bodyBytes.add(sent, ordering: .sequentiallyConsistent) }
        }
        return true
    }

    private func readRequest(_ client: Int32, _ pending: inout [UInt8]) -> OriginRequest? {
        let separator = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while true {
            if let end = pending.firstRange(of: separator)?.upperBound { headEnd = end; break }
            guard readMore(client, &pending) else { return nil }
        }
        guard let headEnd else { return nil }
        let lines = String(decoding: pending[..<(headEnd - 4)], as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = lines[0].split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var request = OriginRequest(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: [])
        let bodyLength = Int(request.header("Content-Length") ?? "0") ?? 0
        while pending.count < headEnd + bodyLength {
            guard readMore(client, &pending) else { return nil }
        }
        request.body = Array(pending[headEnd..<(headEnd + bodyLength)])
        pending.removeFirst(headEnd + bodyLength)
        return request
    }

    private func readMore(_ client: Int32, _ pending: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return false }
        pending.append(contentsOf: chunk[..<count])
        return true
    }
}
