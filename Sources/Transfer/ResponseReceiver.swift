/// Where the bytes of one attempt go. Collects each response head as curl delivers it, decides
/// what the final response's body is for (`ResponsePlan`), then writes, keeps or discards the body.
/// Returning false from `receiveHeaderLine` or `receiveBody` asks curl to stop; `stopReason` says why.
final class ResponseReceiver {
    enum StopReason: Equatable {
        case failed(TransferFailure)
        /// The rest of the body is of no use (memory limit reached, or enough of a discarded body
        /// read): the response still counts as received.
        case bodyNotNeeded
    }

    /// A discarded body (an error page) is read up to this much, so that the connection can be
    /// reused, then the transfer stops: a huge or endless error page must not hold the slot.
    static let discardLimit: Int64 = 1 << 20

    let file: FileSink?
    private let memoryLimit: Int
    private let resumeOffset: Int64?
    /// Set for a segment: where its range ends (exclusive).
    let segmentEnd: Int64?
    private let maxBytes: Int64?
    private let followRedirects: Bool
    /// Keep every field of each head (`ResponseHeaders.fields`).
    private let keepsHeaderFields: Bool
    /// `TransferRequest.remoteFileHeld`.
    private let remoteFileHeld: String?

    /// The head of the latest response: after the attempt, the final one's.
    private(set) var head: ResponseHeaders?
    /// Set once the latest response's head is complete.
    private(set) var plan: ResponsePlan?
    private(set) var stopReason: StopReason?
    private(set) var bytesThisAttempt: Int64 = 0
    private(set) var memory: [UInt8] = []
    private var bytesThisResponse: Int64 = 0

    init(file: FileSink?, memoryLimit: Int, resumeOffset: Int64?, segmentEnd: Int64? = nil, maxBytes: Int64?,
         followRedirects: Bool, keepsHeaderFields: Bool = false, remoteFileHeld: String? = nil) {
        self.keepsHeaderFields = keepsHeaderFields
        self.remoteFileHeld = remoteFileHeld
        self.file = file
        self.memoryLimit = memoryLimit
        self.resumeOffset = resumeOffset
        self.segmentEnd = segmentEnd
        self.maxBytes = maxBytes
        self.followRedirects = followRedirects
    }

    var bytesOnDisk: Int64 { file?.bytesWritten ?? Int64(memory.count) }

    /// Where in the file the final response's body starts, once its head is in and the body is the file's.
    var bodyStart: Int64? {
        guard case .writeFile(let startOver)? = plan?.action else { return nil }
        return startOver ? 0 : resumeOffset ?? 0
    }

    /// A redirect fetchd follows itself: what the last hop's response left is no longer the answer.
    func nextHop() {
        head = nil
        plan = nil
        stopReason = nil
    }

    /// Records why the transfer is being stopped from outside (a stall, say).
    func stop(_ failure: TransferFailure) {
        stopReason = .failed(failure)
    }

    /// One header line as curl passes it, with its line ending: a status line, a field, or the
    /// empty line that ends a head (trailers after a chunked body come the same way).
    func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var end = bytes.count
        while end > 0, bytes[end - 1] == UInt8(ascii: "\n") || bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let line = UnsafeRawBufferPointer(rebasing: bytes[..<end])

        if line.starts(with: "HTTP/".utf8) {
            head = ResponseHeaders(statusLine: line)
            plan = nil
            bytesThisResponse = 0
            return true
        }
        guard plan == nil, head != nil else { return true }  // trailers, or garbage before a status line
        if line.isEmpty { return headComplete() }
        head?.add(line: line, keeping: keepsHeaderFields)
        return true
    }

    /// An FTP or SFTP file, described by its server before its first byte (or before the transfer
    /// ends, when there are none): decided as an HTTP head would be, the validator compared here
    /// as an origin compares `If-Range`; a file that still is the one held is answered `304`, and
    /// its bytes go no further.
    func receiveRemoteFile(_ remote: RemoteFile, expected validator: String?) -> Bool {
        if resumeOffset == nil, let held = remoteFileHeld, remote.isUnchanged(from: held), let unchanged = remote.notModifiedHead {
            head = unchanged
            plan = ResponsePlan(action: .discard, bytesExpected: nil)
            return stop(.bodyNotNeeded)
        }
        guard let described = remote.head(resumeOffset: resumeOffset, expected: validator) else {
            let changed = TransferFailure.rangeMismatch("the remote file changed since the partial data was written")
            plan = ResponsePlan(action: .fail(changed, truncate: true), bytesExpected: remote.size)
            file?.startOver()
            return stop(.failed(changed))
        }
        head = described
        return headComplete()
    }

    /// Whether body bytes must wait: the file's writer is too far behind to take `count` more.
    func mustWait(toTake count: Int) -> Bool {
        guard case .writeFile? = plan?.action, let file else { return false }
        return file.mustWait(toTake: count)
    }

    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = Int64(bytes.count)
        bytesThisAttempt += count
        bytesThisResponse += count
        switch plan?.action {
        case .keepInMemory:
            if let maxBytes, bytesThisResponse > maxBytes { return stop(.failed(.tooLarge)) }
            memory.append(contentsOf: bytes.prefix(memoryLimit - memory.count))
            return memory.count < memoryLimit ? true : stop(.bodyNotNeeded)
        case .writeFile:
            guard let file else { return stop(.failed(.fileError("no file to write to"))) }
            if let maxBytes, file.length + count > maxBytes { return stop(.failed(.tooLarge)) }
            if let segmentEnd, file.length + count > segmentEnd {
                return stop(.failed(.rangeMismatch("the response runs past the end of the range, byte \(segmentEnd)")))
            }
            do {
                try file.write(bytes)
            } catch {
                return stop(.failed(error))
            }
            return true
        case .fail:
            return false
        case .discard, .alreadyComplete, nil:
            return bytesThisResponse <= Self.discardLimit ? true : stop(.bodyNotNeeded)
        }
    }

    private func headComplete() -> Bool {
        guard let head else { return true }
        // An interim 1xx response: the real head follows.
        if head.status < 200 { return true }
        // A hop curl is about to follow: its body (which curl skips anyway) is nobody's.
        if followRedirects, (300..<400).contains(head.status), head.location != nil {
            plan = ResponsePlan(action: .discard, bytesExpected: nil)
            return true
        }
        let decided = ResponsePlan.decide(
            for: head, resumeOffset: resumeOffset, isFile: file != nil, segmentEnd: segmentEnd, maxBytes: maxBytes)
        plan = decided
        switch decided.action {
        case .fail(let failure, let truncate):
            if truncate { file?.startOver() }
            return stop(.failed(failure))
        case .writeFile(startOver: true):
            file?.startOver()
        case .writeFile(startOver: false), .keepInMemory, .discard, .alreadyComplete:
            break
        }
        return true
    }

    private func stop(_ reason: StopReason) -> Bool {
        stopReason = reason
        return false
    }
}
