import Glibc

/// Turns one connection's byte stream into requests (RFC 9112), one at a time.
///
/// Pure: no sockets and no clocks. The connection appends what it reads and calls `next()`
/// until it gets something other than `.needMore`. Bytes past the end of a request stay
/// buffered for the next one (pipelining). After `.reject` the parser stops: the framing of
/// the rest of the stream can no longer be trusted.
///
/// `package` rather than internal so that the fuzz target (Fuzz/RequestParserFuzz) drives it
/// exactly as the connection does.
package struct RequestParser {
    package enum Action {
        /// Read more bytes.
        case needMore
        /// Write "HTTP/1.1 100 Continue" (the client waits for it before sending the body),
        /// then call `next()` again.
        case sendContinue
        case request(HTTPRequest, keepAlive: Bool)
        /// Answer with a problem+json of that status and close the connection.
        case reject(RequestRejection)
    }

    /// What the parser is waiting for; the connection picks its read deadline from it.
    enum Phase: Equatable {
        /// Nothing of a request yet.
        case idle
        case head
        case body
    }

    private enum State {
        case idle
        case head
        case contentBody(length: Int)
        case chunkedBody
        case rejected
    }

    private struct RequestLine {
        var method: String
        var target: String
        var version: String
    }

    /// The head of the request whose body is being read.
    private struct Head {
        var requestLine: RequestLine
        var headers: HTTPHeaders
        var keepAlive: Bool
    }

    private let configuration: HTTPServerConfiguration
    private let remoteAddress: String

    private var buffer: [UInt8] = []
    /// Index in `buffer` of the first byte not yet consumed.
    private var start = 0
    private var state = State.idle

    // Head scanning; indices are absolute positions in `buffer`, which is only compacted
    // between requests and while decoding a chunked body.
    private var scanFrom = 0
    private var lineStart = 0
    private var headerSectionStart: Int?
    private var requestLine: RequestLine?
    private var fields = HTTPHeaders()

    private var head: Head?
    private var chunked: ChunkedDecoder
    private var body: [UInt8] = []

    package init(configuration: HTTPServerConfiguration, remoteAddress: String) {
        self.configuration = configuration
        self.remoteAddress = remoteAddress
        chunked = ChunkedDecoder(maxBodyBytes: configuration.maxBodyBytes, maxTrailerBytes: configuration.maxHeaderBytes)
    }

    /// Bytes received but not yet consumed by a request.
    package var bufferedByteCount: Int { buffer.count - start }

    var phase: Phase {
        switch state {
        case .idle: start < buffer.count ? .head : .idle
        case .head: .head
        case .contentBody, .chunkedBody: .body
        case .rejected: .idle
        }
    }

    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    package mutating func next() -> Action {
        switch state {
        case .idle:
            compact()
            guard start < buffer.count else { return .needMore }
            state = .head
            scanFrom = start
            lineStart = start
            headerSectionStart = nil
            requestLine = nil
            fields = HTTPHeaders()
            return parseHead()
        case .head:
            return parseHead()
        case .contentBody(let length):
            guard buffer.count - start >= length else { return .needMore }
            let body = Array(buffer[start..<start + length])
            start += length
            return complete(body: body)
        case .chunkedBody:
            return decodeChunkedBody()
        case .rejected:
            return .needMore
        }
    }

    // MARK: Head

    /// nil from the scan means the head is complete and its body is to be read.
    private mutating func parseHead() -> Action {
        withBuffer { parser, bytes in parser.parseHead(bytes) } ?? next()
    }

    private mutating func parseHead(_ bytes: UnsafeBufferPointer<UInt8>) -> Action? {
        while true {
            guard let lineFeed = indexOfLineFeed(in: bytes, from: scanFrom) else {
                scanFrom = bytes.count
                // Refuse an over-long line before its end arrives, so the buffer stays bounded.
                if let sectionStart = headerSectionStart {
                    if bytes.count - sectionStart > configuration.maxHeaderBytes + 1 {
                        return reject(431, "The header section is larger than \(configuration.maxHeaderBytes) bytes.")
                    }
                } else if bytes.count - start > configuration.maxRequestLineBytes + 1 {
                    return reject(414, "The request line is longer than \(configuration.maxRequestLineBytes) bytes.")
                }
                return .needMore
            }
            var lineEnd = lineFeed
            if lineEnd > lineStart && bytes[lineEnd - 1] == UInt8(ascii: "\r") { lineEnd -= 1 }
            let line = lineStart..<lineEnd
            lineStart = lineFeed + 1
            scanFrom = lineFeed + 1

            if let sectionStart = headerSectionStart {
                if line.isEmpty {
                    return finishHead(end: lineStart)
                }
                guard fields.count < configuration.maxHeaderCount else {
                    return reject(431, "The request has more than \(configuration.maxHeaderCount) header fields.")
                }
                guard lineStart - sectionStart <= configuration.maxHeaderBytes else {
                    return reject(431, "The header section is larger than \(configuration.maxHeaderBytes) bytes.")
                }
                if let rejection = parseField(bytes, line) { return reject(rejection) }
            } else {
                // Empty lines before the request line are ignored (RFC 9112 §2.2); they count
                // towards the request line's limit.
                guard lineEnd - start <= configuration.maxRequestLineBytes else {
                    return reject(414, "The request line is longer than \(configuration.maxRequestLineBytes) bytes.")
                }
                if line.isEmpty { continue }
                if let rejection = parseRequestLine(bytes, line) { return reject(rejection) }
                headerSectionStart = lineStart
            }
        }
    }

    /// method SP request-target SP HTTP-version (RFC 9112 §3).
    private mutating func parseRequestLine(_ bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>) -> RequestRejection? {
        let malformed = RequestRejection(400, "Malformed request line.")
        guard let firstSpace = line.first(where: { bytes[$0] == UInt8(ascii: " ") }),
              let secondSpace = (firstSpace + 1..<line.upperBound).first(where: { bytes[$0] == UInt8(ascii: " ") })
        else { return malformed }
        let method = line.lowerBound..<firstSpace
        let target = firstSpace + 1..<secondSpace
        let version = secondSpace + 1..<line.upperBound
        guard !method.isEmpty, method.allSatisfy({ isTokenByte(bytes[$0]) }),
              !target.isEmpty, target.allSatisfy({ (0x21...0x7E).contains(bytes[$0]) })
        else { return malformed }

        // HTTP-version = "HTTP/" DIGIT "." DIGIT
        guard version.count == 8,
              zip(version.prefix(5), "HTTP/".utf8).allSatisfy({ bytes[$0] == $1 }),
              bytes[version.lowerBound + 6] == UInt8(ascii: "."),
              let major = digitValue(bytes[version.lowerBound + 5]),
              let minor = digitValue(bytes[version.lowerBound + 7])
        else { return malformed }
        guard major == 1 else {
            return RequestRejection(400, "Only HTTP/1.0 and HTTP/1.1 are supported.")
        }

        let methodString = string(bytes, method)
        let targetString = string(bytes, target)
        // origin-form, absolute-form, or asterisk-form for OPTIONS (RFC 9112 §3.2).
        let isOriginForm = bytes[target.lowerBound] == UInt8(ascii: "/")
        guard isOriginForm || (targetString == "*" && methodString == "OPTIONS") || isAbsoluteForm(targetString) else {
            return RequestRejection(400, "Malformed request target.")
        }
        // A 1.x recipient treats a higher minor version as the highest it implements (RFC 9110 §2.5).
        requestLine = RequestLine(method: methodString, target: targetString, version: minor == 0 ? "HTTP/1.0" : "HTTP/1.1")
        return nil
    }

    /// field-name ":" OWS field-value OWS (RFC 9112 §5).
    private mutating func parseField(_ bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>) -> RequestRejection? {
        let first = bytes[line.lowerBound]
        if first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
            return RequestRejection(400, "Obsolete line folding is not accepted.")
        }
        var colon = line.lowerBound
        while colon < line.upperBound && isTokenByte(bytes[colon]) { colon += 1 }
        guard colon < line.upperBound else {
            return RequestRejection(400, "A header field has no colon.")
        }
        switch bytes[colon] {
        case UInt8(ascii: ":") where colon > line.lowerBound:
            break
        case UInt8(ascii: " "), UInt8(ascii: "\t"):
            return RequestRejection(400, "Whitespace between a header field name and its colon.")
        case UInt8(ascii: "\r"):
            return RequestRejection(400, "Bare CR in the header section.")
        default:
            return RequestRejection(400, "Invalid header field name.")
        }

        var valueStart = colon + 1
        var valueEnd = line.upperBound
        while valueStart < valueEnd && isWhitespace(bytes[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart && isWhitespace(bytes[valueEnd - 1]) { valueEnd -= 1 }
        for index in valueStart..<valueEnd {
            switch bytes[index] {
            case UInt8(ascii: "\t"), 0x20...0x7E, 0x80...0xFF: continue
            case UInt8(ascii: "\r"): return RequestRejection(400, "Bare CR in the header section.")
            default: return RequestRejection(400, "Invalid character in a header field value.")
            }
        }
        fields.add(string(bytes, line.lowerBound..<colon), string(bytes, valueStart..<valueEnd))
        return nil
    }

    /// Applies the message-framing and connection rules once the whole head is in
    /// (RFC 9112 §6, §9.6; RFC 9110 §7.2, §10.1.1).
    private mutating func finishHead(end: Int) -> Action? {
        guard let requestLine else { return reject(400, "Malformed request line.") }
        start = end
        let isHTTP11 = requestLine.version == "HTTP/1.1"

        var hostCount = 0
        var contentLengths: [String] = []
        var transferCodings: [Substring] = []
        var hasTransferEncoding = false
        var connectionClose = false
        var connectionKeepAlive = false
        var expectations: [Substring] = []
        for (name, value) in fields {
            if equalsIgnoringASCIICase(name, "Host") {
                hostCount += 1
            } else if equalsIgnoringASCIICase(name, "Content-Length") {
                contentLengths.append(value)
            } else if equalsIgnoringASCIICase(name, "Transfer-Encoding") {
                hasTransferEncoding = true
                transferCodings += listElements(value)
            } else if equalsIgnoringASCIICase(name, "Connection") {
                for option in listElements(value) {
                    if equalsIgnoringASCIICase(String(option), "close") { connectionClose = true }
                    if equalsIgnoringASCIICase(String(option), "keep-alive") { connectionKeepAlive = true }
                }
            } else if equalsIgnoringASCIICase(name, "Expect") {
                expectations += listElements(value)
                if value.isEmpty { expectations.append("") }
            }
        }

        if isHTTP11 && hostCount == 0 { return reject(400, "The Host header field is missing.") }
        if hostCount > 1 { return reject(400, "More than one Host header field.") }

        enum Framing: Equatable { case none, length(Int), chunked }
        var framing = Framing.none
        if hasTransferEncoding {
            if !contentLengths.isEmpty { return reject(400, "Both Content-Length and Transfer-Encoding are present.") }
            if !isHTTP11 { return reject(400, "Transfer-Encoding is not allowed in HTTP/1.0.") }
            let codings = transferCodings.map { $0.prefix { $0 != ";" && $0 != " " && $0 != "\t" }.lowercased() }
            guard codings.last == "chunked" else { return reject(400, "Transfer-Encoding must end with chunked.") }
            guard codings.count == 1 else { return reject(400, "Unsupported transfer coding.") }
            framing = .chunked
        } else if !contentLengths.isEmpty {
            guard let length = parseContentLength(contentLengths) else {
                return reject(400, "Invalid or conflicting Content-Length.")
            }
            if length > 0 { framing = .length(length) }
        }
        let maxBodyBytes = configuration.maxBodyBytes(forTarget: requestLine.target)
        if case .length(let length) = framing, length > maxBodyBytes {
            return reject(413, "The request body is larger than \(maxBodyBytes) bytes.")
        }

        // An HTTP/1.0 client cannot expect 100-continue; the expectation is ignored (RFC 9110 §10.1.1).
        var sendContinue = false
        if isHTTP11 && !expectations.isEmpty {
            guard expectations.allSatisfy({ equalsIgnoringASCIICase(String($0), "100-continue") }) else {
                return reject(417, "Only the 100-continue expectation is supported.")
            }
            sendContinue = framing != .none && start == buffer.count
        }

        let keepAlive = !connectionClose && (isHTTP11 || connectionKeepAlive)
        head = Head(requestLine: requestLine, headers: fields, keepAlive: keepAlive)
        fields = HTTPHeaders()
        switch framing {
        case .none:
            return complete(body: [])
        case .length(let length):
            // Room for the whole body at once (its length is within the cap), not doubling per read.
            // Only when short of it: the head is parsed over a second reference, so this copies.
            if buffer.capacity < start + length { buffer.reserveCapacity(start + length) }
            state = .contentBody(length: length)
        case .chunked:
            chunked = ChunkedDecoder(maxBodyBytes: maxBodyBytes, maxTrailerBytes: configuration.maxHeaderBytes)
            body = []
            state = .chunkedBody
        }
        return sendContinue ? .sendContinue : nil
    }

    // MARK: Body

    private mutating func decodeChunkedBody() -> Action {
        var consumed = 0
        let progress = decodeChunks(consumed: &consumed)
        start += consumed
        switch progress {
        case .needMore:
            // Chunk framing can be much larger than the data it carries; drop consumed bytes.
            if start >= 64 * 1024 {
                buffer.removeSubrange(0..<start)
                start = 0
            }
            return .needMore
        case .done:
            let decoded = body
            body = []
            return complete(body: decoded)
        case .failed(let rejection):
            return reject(rejection)
        }
    }

    private mutating func decodeChunks(consumed: inout Int) -> ChunkedDecoder.Progress {
        withBuffer { parser, all in
            parser.chunked.decode(UnsafeBufferPointer(rebasing: all[parser.start...]), into: &parser.body, consumed: &consumed)
        }
    }

    private mutating func complete(body: [UInt8]) -> Action {
        guard let head else { return reject(400, "Malformed request.") }
        self.head = nil
        state = .idle
        let request = HTTPRequest(
            method: head.requestLine.method,
            target: head.requestLine.target,
            version: head.requestLine.version,
            headers: head.headers,
            body: body,
            remoteAddress: remoteAddress
        )
        return .request(request, keepAlive: head.keepAlive)
    }

    private mutating func reject(_ status: Int, _ detail: String) -> Action {
        reject(RequestRejection(status, detail))
    }

    private mutating func reject(_ rejection: RequestRejection) -> Action {
        state = .rejected
        buffer = []
        start = 0
        return .reject(rejection)
    }

    /// Runs `body` over the buffered bytes. It reads a copy of the array reference, so `body` may
    /// mutate the parser; the copy is released on return, before the caller may compact the
    /// buffer (which would otherwise copy it).
    private mutating func withBuffer<R>(_ body: (inout RequestParser, UnsafeBufferPointer<UInt8>) -> R) -> R {
        let bytes = buffer
        return bytes.withUnsafeBufferPointer { body(&self, $0) }
    }

    /// Drops consumed bytes between requests.
    private mutating func compact() {
        guard start > 0 else { return }
        if start == buffer.count {
            // Let a buffer grown by a large body go rather than keep it per idle connection.
            if buffer.capacity > 64 * 1024 { buffer = [] } else { buffer.removeAll(keepingCapacity: true) }
        } else {
            buffer.removeSubrange(0..<start)
        }
        start = 0
    }
}

// MARK: - Helpers

private func indexOfLineFeed(in bytes: UnsafeBufferPointer<UInt8>, from index: Int) -> Int? {
    guard index < bytes.count, let base = bytes.baseAddress,
          let found = memchr(base + index, Int32(UInt8(ascii: "\n")), bytes.count - index)
    else { return nil }
    return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
}

private func isAbsoluteForm(_ target: String) -> Bool {
    let lowercased = target.lowercased()
    return lowercased.hasPrefix("http://") || lowercased.hasPrefix("https://")
}

private func string(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
    String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
}

@inline(__always)
private func isWhitespace(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
}

private func digitValue(_ byte: UInt8) -> Int? {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? Int(byte - UInt8(ascii: "0")) : nil
}

/// The non-empty elements of a comma-separated list value, trimmed of whitespace.
private func listElements(_ value: String) -> [Substring] {
    value.split(separator: ",").compactMap { element in
        let trimmed = element.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
        return trimmed.isEmpty ? nil : Substring(trimmed)
    }
}

/// One length from every Content-Length value, each of which may be a list (RFC 9112 §6.3):
/// nil if any element is not a plain decimal number or two differ.
private func parseContentLength(_ values: [String]) -> Int? {
    var length: Int?
    func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
    for value in values {
        for element in value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            guard let first = element.firstIndex(where: { !isBlank($0) }), let last = element.lastIndex(where: { !isBlank($0) }) else {
                return nil
            }
            let digits = element[first...last]
            // 18 digits cannot overflow Int; nobody sends an 18-digit body.
            guard digits.count <= 18 else { return nil }
            var parsed = 0
            for byte in digits {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                parsed = parsed * 10 + Int(byte - UInt8(ascii: "0"))
            }
            if let length, length != parsed { return nil }
            length = parsed
        }
    }
    return length
}
