import CCurl
import Dispatch
import Glibc
import Logging

/// One attempt: a curl easy handle set up from a `TransferRequest`, the C callbacks that feed its
/// `ResponseReceiver`, the stall and progress clock, and the result at the end.
/// Lives on the engine queue from creation to `finish`.
final class EasyTransfer {
    enum Outcome {
        /// curl finished the transfer with this code.
        case curl(CURLcode)
        /// The engine ended it (cancel, or a failure to start).
        case failed(TransferFailure)
    }

    let id: TransferID
    let handle: UnsafeMutableRawPointer
    /// The transfer's share of the engine's bandwidth budget; file downloads only.
    let throttle: TransferThrottle?
    /// Its share of the engine's upload budget; requests with a `bodyFile` only (their own cap is
    /// CURLOPT_MAX_SEND_SPEED_LARGE).
    let sendThrottle: TransferThrottle?
    let request: TransferRequest
    /// A PUT or POST body read from a file (`TransferRequest.bodyFile`).
    var bodyReader: FileBodyReader?
    let network: NetworkSettings
    let receiver: ResponseReceiver
    private let sockets: SocketRegistry
    private let logger: Logger
    private let onProgress: @Sendable (TransferProgress) -> Void
    private let onComplete: @Sendable (TransferResult) -> Void
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var requestHeaders: UnsafeMutablePointer<curl_slist>?
    /// Range and If-Range of a resume, sent on every hop.
    private var resumeHeaders: [(String, String)] = []
    /// CURLOPT_CONNECT_TO of the current hop: the address fetchd resolved and checked.
    var pinnedAddress: UnsafeMutablePointer<curl_slist>?
    /// The current hop goes through the proxy: curl connects to the proxy, whose address the
    /// operator chose, so connections are not judged by the address policy (the hop was, before).
    var viaProxy = false
    /// Redirects fetchd followed itself (with a proxy).
    var redirectsFollowed = 0
    /// The last address the policy refused: if connecting then fails, that is why.
    private var refusedAddress: String?
    /// Set for ftp://, ftps:// and sftp://: no HTTP head comes, the server describes the file.
    let remoteScheme: RemoteFile.Scheme?
    /// The validator a resume of a remote file expects, and where it resumes.
    private var remoteResume: (offset: Int64, validator: String)?
    /// The server's last FTP reply line that refused something (4xx or 5xx): the `QUIT` that
    /// follows a refusal must not hide it.
    private var ftpReply: String?
    /// FTP reply lines received so far (`MultiDriver` tells from it whether curl read a reply).
    private(set) var repliesReceived = 0
    /// An FTP transfer's sockets curl watches (`MultiDriver.checkUnwatchedFTP`).
    var watchedSockets: Set<curl_socket_t> = []

    /// Uptime of the last sign of life (a header, body bytes, upload progress, a new connection).
    private var lastActivity = DispatchTime.now().uptimeNanoseconds
    /// The stall clock runs only once connected; before that the connect timeout applies.
    private var isConnected = false
    /// curl holds the body back because the file's writer is behind or the bandwidth allowance ran
    /// out (CURL_WRITEFUNC_PAUSE): the stall clock stops until `resumeTransfer`.
    private(set) var isPaused = false
    private(set) var uploaded: curl_off_t = 0
    private var lastProgressReport: UInt64 = 0
    private var lastProgress: TransferProgress?

    private static let progressInterval: UInt64 = 250_000_000

    /// `onWritable` runs (on some other queue) when the file can take bytes again after the transfer
    /// paused for it: call `resumeTransfer` then. `receiveBufferSize` is curl's receive buffer
    /// (CURLOPT_BUFFERSIZE), at most `bufferSize(throttledTo:)` of the request.
    init(id: TransferID, request: TransferRequest, network: NetworkSettings, sockets: SocketRegistry, staging: WriteStaging,
         receiveBufferSize: Int, logger: Logger,
         onWritable: @escaping @Sendable () -> Void,
         onProgress: @escaping @Sendable (TransferProgress) -> Void,
         onComplete: @escaping @Sendable (TransferResult) -> Void) throws(TransferFailure) {
        var file: FileSink?
        var resume: Resume?
        var segmentEnd: Int64?
        var memoryLimit = 0
        switch request.sink {
        case .file(let path, let validator):
            let sink = try FileSink(path: path, keepExisting: validator != nil, extraDigest: request.extraDigest,
                                    hashing: request.hashesFile, writeLimit: request.writeLimit, staging: staging, onWritable: onWritable)
            if let validator, sink.length > 0 { resume = Resume(offset: sink.length, end: nil, validator: validator) }
            // A remote file comes over one connection, whole: no parts.
            if let length = request.firstPartLength, RemoteFile.Scheme(url: request.url) == nil {
                // Without a validator there is nothing to resume: the part starts the file.
                let offset = resume?.offset ?? 0
                resume = Resume(offset: offset, end: offset + max(1, length), validator: resume?.validator ?? "")
            }
            file = sink
        case .segment(let path, let from, let end, let validator):
            file = try FileSink(path: path, keepExisting: true, extraDigest: nil, segmentFrom: from,
                                staging: staging, onWritable: onWritable)
            resume = Resume(offset: from, end: end, validator: validator)
            segmentEnd = end
        case .memory(let limit):
            memoryLimit = max(0, limit)
        }
        guard let handle = curl_easy_init() else {
            file?.abandon { _ in }
            throw .network("curl_easy_init failed")
        }
        self.id = id
        self.handle = handle
        throttle = file == nil ? nil : TransferThrottle(ownLimit: request.maxSpeedBytesPerSecond)
        sendThrottle = request.bodyFile == nil ? nil : TransferThrottle(ownLimit: nil)
        self.request = request
        remoteScheme = RemoteFile.Scheme(url: request.url)
        self.network = network
        self.sockets = sockets
        self.logger = logger
        self.onProgress = onProgress
        self.onComplete = onComplete
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(to: 0)
        receiver = ResponseReceiver(
            file: file, memoryLimit: memoryLimit, resumeOffset: resume?.offset, segmentEnd: segmentEnd,
            maxBytes: request.maxBytes, followRedirects: request.followRedirects, keepsHeaderFields: request.keepsResponseHeaders,
            remoteFileHeld: request.remoteFileHeld)
        do {
            try configure(resume: resume, receiveBufferSize: receiveBufferSize)
        } catch {
            release()
            file?.abandon { _ in }
            throw error
        }
    }

    /// The transfer whose handle this is (CURLOPT_PRIVATE).
    static func owning(_ handle: UnsafeMutableRawPointer) -> EasyTransfer? {
        var pointer: UnsafeMutableRawPointer?
        guard fetchd_easy_getinfo_ptr(handle, CURLINFO_PRIVATE, &pointer) == CURLE_OK, let pointer else { return nil }
        return Unmanaged<EasyTransfer>.fromOpaque(pointer).takeUnretainedValue()
    }

    // MARK: - Options

    /// A request for the representation from `offset` (to `end`, exclusive, when given) if it is
    /// still `validator`.
    private struct Resume {
        var offset: Int64
        var end: Int64?
        var validator: String
    }

    private func configure(resume: Resume?, receiveBufferSize: Int) throws(TransferFailure) {
        try set(CURLOPT_URL, request.url)
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_PROTOCOLS_STR, "http,https,ftp,ftps,sftp")
        try set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        // With a proxy fetchd follows redirects itself, to judge every hop before asking the proxy.
        try set(CURLOPT_FOLLOWLOCATION, request.followRedirects && network.proxy == nil ? 1 : 0)
        try set(CURLOPT_MAXREDIRS, request.maxRedirects)
        try set(CURLOPT_USERAGENT, "fetchd/0.1")
        // Proxy environment variables must not redirect fetchd's traffic (or its address checks).
        try set(CURLOPT_PROXY, "")
        // HTTP/2 when the origin offers it through ALPN, HTTP/1.1 otherwise.
        try set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        for (option, blob) in network.tls.curlOptions { try check(blob.apply(to: handle, option), option) }
        try set(CURLOPT_BUFFERSIZE, min(receiveBufferSize, Self.bufferSize(throttledTo: request.maxSpeedBytesPerSecond)))
        try set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout))
        try set(CURLOPT_LOW_SPEED_LIMIT, 1)
        try set(CURLOPT_LOW_SPEED_TIME, max(1, Int(request.stallTimeout.rounded(.up))))
        if let total = request.totalTimeout { try set(CURLOPT_TIMEOUT_MS, Self.milliseconds(total)) }
        if let maxBytes = request.maxBytes { try set(CURLOPT_MAXFILESIZE_LARGE, offset: maxBytes) }
        if let speed = request.maxSpeedBytesPerSecond {
            try set(CURLOPT_MAX_RECV_SPEED_LARGE, offset: speed)
            // An upload's cap is on what it sends.
            if request.bodyFile != nil { try set(CURLOPT_MAX_SEND_SPEED_LARGE, offset: speed) }
        }
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        try set(CURLOPT_PRIVATE, pointer: Unmanaged.passUnretained(self).toOpaque())

        if let remoteScheme {
            remoteResume = resume.map { ($0.offset, $0.validator) }
            try configureRemote(remoteScheme, resumeOffset: resume?.offset, settings: network.remoteFiles)
        } else if let resume {
            resumeHeaders = [("Range", "bytes=\(resume.offset)-\(resume.end.map { String($0 - 1) } ?? "")")]
            // An empty validator: partial data from another URL (a mirror) that only the job's digest
            // can vouch for, whose validator means nothing there.
            if !resume.validator.isEmpty { resumeHeaders.append(("If-Range", resume.validator)) }
        }
        try configureMethod()
        try setHeaders(withCredentials: true)
        try installCallbacks()
    }

    /// The request's headers and the resume's. Without credentials: no Authorization or Cookie
    /// (for another origin, as curl does when it follows a redirect itself).
    func setHeaders(withCredentials: Bool) throws(TransferFailure) {
        var headers = request.headers + resumeHeaders
        if !withCredentials {
            headers.removeAll { ["authorization", "cookie"].contains($0.0.lowercased()) }
        }
        if request.method == .post || request.method == .put, request.signing == nil {
            // An empty value removes the header curl would add for larger bodies. Not in a signed
            // request: SigV4 signs every listed header, removed ones too, and servers leave Expect
            // out when they check the signature.
            headers.append(("Expect", ""))
        }
        curl_slist_free_all(requestHeaders)
        requestHeaders = nil
        for (name, value) in headers {
            guard Self.isSafeHeader(name, value) else {
                logger.warning("request header dropped: CR, LF or NUL in it", metadata: ["transfer.id": "\(id)"])
                continue
            }
            guard let list = curl_slist_append(requestHeaders, "\(name): \(value)") else {
                throw .network("out of memory building request headers")
            }
            requestHeaders = list
        }
        try check(fetchd_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, requestHeaders), CURLOPT_HTTPHEADER)
    }

    private func installCallbacks() throws(TransferFailure) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        try set(CURLOPT_WRITEDATA, pointer: me)
        try check(fetchd_easy_setopt_write(handle, CURLOPT_WRITEFUNCTION) { data, size, count, userdata in
            guard let userdata else { return 0 }
            let transfer = Unmanaged<EasyTransfer>.fromOpaque(userdata).takeUnretainedValue()
            return transfer.received(body: UnsafeRawBufferPointer(start: data, count: size * count))
        }, CURLOPT_WRITEFUNCTION)

        try set(CURLOPT_HEADERDATA, pointer: me)
        try check(fetchd_easy_setopt_write(handle, CURLOPT_HEADERFUNCTION) { data, size, count, userdata in
            guard let userdata else { return 0 }
            let transfer = Unmanaged<EasyTransfer>.fromOpaque(userdata).takeUnretainedValue()
            return transfer.received(header: UnsafeRawBufferPointer(start: data, count: size * count))
        }, CURLOPT_HEADERFUNCTION)

        try set(CURLOPT_NOPROGRESS, 0)
        try set(CURLOPT_XFERINFODATA, pointer: me)
        try check(fetchd_easy_setopt_xferinfo(handle, CURLOPT_XFERINFOFUNCTION) { userdata, _, _, _, uploaded in
            guard let userdata else { return 1 }
            return Unmanaged<EasyTransfer>.fromOpaque(userdata).takeUnretainedValue().tick(uploaded: uploaded) ? 0 : 1
        }, CURLOPT_XFERINFOFUNCTION)

        try set(CURLOPT_PREREQDATA, pointer: me)
        try check(fetchd_easy_setopt_prereq(handle, CURLOPT_PREREQFUNCTION) { userdata, primaryIP, _, _, _ in
            guard let userdata, let primaryIP else { return CURL_PREREQFUNC_ABORT }
            let transfer = Unmanaged<EasyTransfer>.fromOpaque(userdata).takeUnretainedValue()
            return transfer.connected(to: String(cString: primaryIP)) ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT
        }, CURLOPT_PREREQFUNCTION)

        try set(CURLOPT_OPENSOCKETDATA, pointer: me)
        try check(fetchd_easy_setopt_opensocket(handle, CURLOPT_OPENSOCKETFUNCTION) { userdata, purpose, address in
            guard let userdata, let address else { return CURL_SOCKET_BAD }
            let transfer = Unmanaged<EasyTransfer>.fromOpaque(userdata).takeUnretainedValue()
            return transfer.openSocket(purpose: purpose, address: address)
        }, CURLOPT_OPENSOCKETFUNCTION)

        // Connections outlive easy handles in curl's cache, so closing goes to the registry,
        // which outlives the multi handle.
        try set(CURLOPT_CLOSESOCKETDATA, pointer: Unmanaged.passUnretained(sockets).toOpaque())
        try check(fetchd_easy_setopt_closesocket(handle, CURLOPT_CLOSESOCKETFUNCTION) { userdata, socket in
            guard let userdata else { return 1 }
            Unmanaged<SocketRegistry>.fromOpaque(userdata).takeUnretainedValue().closeSocket(socket)
            return 0
        }, CURLOPT_CLOSESOCKETFUNCTION)
    }

    // MARK: - Callbacks (inside curl_multi_socket_action, on the engine queue)

    private func received(body: UnsafeRawBufferPointer) -> Int {
        lastActivity = DispatchTime.now().uptimeNanoseconds
        if remoteScheme != nil, receiver.plan == nil, !describeRemoteFile(sending: true) { return Int(CURL_WRITEFUNC_ERROR) }
        // Waiting for the file's writer or for bandwidth (checked in that order, so that bytes not
        // taken use no allowance). curl keeps these bytes, stops reading the socket, and hands
        // them over again on resume, when both are checked again.
        if receiver.mustWait(toTake: body.count) || throttle?.mayTake(body.count) == false {
            isPaused = true
            return Int(CURL_WRITEFUNC_PAUSE)
        }
        return receiver.receiveBody(body) ? body.count : Int(CURL_WRITEFUNC_ERROR)
    }

    /// CURLOPT_READFUNCTION: the next bytes of the request body, unless the upload budget holds
    /// the transfer back (it is paused, and resumed as a held-back download is).
    func sendBody(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let bodyReader else { return Int(CURL_READFUNC_ABORT) }
        // Under the upload budget a read is cut to the allowance, down to 16 KiB.
        let granted = sendThrottle?.grant(upTo: buffer.count, minimum: 16 << 10) ?? buffer.count
        if granted == 0 {
            isPaused = true
            return Int(CURL_READFUNC_PAUSE)
        }
        return bodyReader.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(granted))) ?? Int(CURL_READFUNC_ABORT)
    }

    /// Takes the body again after a pause (curl may hand over what it held back right away).
    /// Not a callback: on the engine queue, outside curl.
    func resumeTransfer() -> CURLcode {
        guard isPaused else { return CURLE_OK }
        isPaused = false
        lastActivity = DispatchTime.now().uptimeNanoseconds
        return curl_easy_pause(handle, CURLPAUSE_CONT)
    }

    private func received(header: UnsafeRawBufferPointer) -> Int {
        lastActivity = DispatchTime.now().uptimeNanoseconds
        if remoteScheme != nil {
            repliesReceived += 1
            let reply = Self.ftpReply(header)
            if let code = TransferFailure.ftpCode(reply), code >= 400 { ftpReply = reply }
            return header.count
        }
        return receiver.receiveHeaderLine(header) ? header.count : Int(CURL_WRITEFUNC_ERROR)
    }

    /// CURLOPT_PREREQFUNCTION: a connection is ready and the request is about to go. A connection
    /// reused from curl's cache skipped `openSocket`, and may have been opened for a transfer with a
    /// looser policy: check its address again. False stops the transfer.
    private func connected(to address: String) -> Bool {
        // Through the proxy this is the proxy's address, which the operator chose.
        guard viaProxy || IPAddress(address).map(request.addressPolicy.permits) == true else {
            refuse(address)
            receiver.stop(.blockedAddress(address))
            return false
        }
        isConnected = true
        lastActivity = DispatchTime.now().uptimeNanoseconds
        return true
    }

    /// CURLOPT_XFERINFOFUNCTION, called often and at least once a second (curl re-checks the
    /// low-speed limit that often): the stall check and the progress report. False stops the transfer.
    private func tick(uploaded: curl_off_t) -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
        if uploaded != self.uploaded {
            self.uploaded = uploaded
            lastActivity = now
        }
        if isConnected, !isPaused, Double(now - lastActivity) > request.stallTimeout * 1e9 {
            receiver.stop(.timeout("no data received for \(request.stallTimeout) s"))
            return false
        }
        if now - lastProgressReport >= Self.progressInterval {
            lastProgressReport = now
            var writing = false
            if case .writeFile? = receiver.plan?.action { writing = true }
            var progress = TransferProgress(bytesOnDisk: receiver.bytesOnDisk, bytesExpected: receiver.plan?.bytesExpected,
                                            validator: writing ? receiver.head?.validator : nil,
                                            isFirstPart: firstPartEnd != nil)
            if writing {
                progress.bodyStart = receiver.bodyStart
                progress.contentDisposition = receiver.head?.contentDisposition
                progress.effectiveURL = effectiveURL
            }
            if bodyReader != nil { progress.bytesSent = bytesSent }
            if progress != lastProgress {
                lastProgress = progress
                onProgress(progress)
            }
        }
        return true
    }

    /// CURLOPT_OPENSOCKETFUNCTION: the one place every connection attempt passes, with the
    /// address about to be connected to (after DNS, on every redirect hop, for every address tried).
    private func openSocket(purpose: curlsocktype, address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        guard purpose == CURLSOCKTYPE_IPCXN else { return CURL_SOCKET_BAD }
        // Connecting (again, on a redirect to another host) is the connect timeout's business.
        isConnected = false
        let target = IPAddress(socketAddress: fetchd_sockaddr_address(address), length: Int(address.pointee.addrlen))
        guard viaProxy || target.map(request.addressPolicy.permits) == true else {
            refuse(target?.description ?? "an address of family \(address.pointee.family)")
            return CURL_SOCKET_BAD
        }
        return sockets.openSocket(family: address.pointee.family, type: address.pointee.socktype,
                                  protocol: address.pointee.protocol)
    }

    /// Decides the remote file's plan from what its server said; false stops the transfer.
    private func describeRemoteFile(sending: Bool) -> Bool {
        guard let remote = describedRemoteFile(resumeOffset: remoteResume?.offset, sending: sending) else {
            receiver.stop(.network("the server sent the file without its size"))
            return false
        }
        return receiver.receiveRemoteFile(remote, expected: remoteResume?.validator)
    }

    private func refuse(_ address: String) {
        refusedAddress = address
        logger.info("connection refused by the address policy", metadata: ["transfer.id": "\(id)", "address": "\(address)"])
    }

    /// The URL of the current hop (after the redirects curl followed).
    var effectiveURL: String? {
        var url: UnsafeMutablePointer<CChar>?
        guard fetchd_easy_getinfo_cstr(handle, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK, let url else { return nil }
        return String(cString: url)
    }

    // MARK: - Finishing

    /// Builds the result, frees the easy handle (already removed from the multi handle), and calls
    /// `onComplete`: at once on `queue`, or after the file is hashed and synced, on the queue
    /// that did that (a `bodyComplete` progress report goes first).
    /// `work` covers that off-queue part.
    func finish(_ outcome: Outcome, queue: DispatchQueue, work: DispatchGroup) {
        var result = TransferResult()
        var status = 0
        if fetchd_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK, status > 0, remoteScheme == nil {
            result.httpStatus = status
        } else if remoteScheme != nil, receiver.head?.status == 304 {
            result.httpStatus = 304
        }
        if remoteScheme != nil, request.bodyFile == nil, case .curl(CURLE_OK) = outcome, receiver.plan == nil {
            // Nothing was left past the resume offset (or the file is empty): no body came.
            _ = describeRemoteFile(sending: false)
        }
        result.effectiveURL = effectiveURL
        result.failure = failure(for: outcome)
        if let bodyReader {
            result.bytesSent = Int64(uploaded)
            if result.bytesSent == bodyReader.length { result.bodySHA256 = bodyReader.sha256 }
        }
        if remoteScheme != nil, bodyReader != nil { result.bytesOnDisk = remoteUploadResult(result.failure) }
        release()

        result.validator = receiver.head?.validator
        result.contentDisposition = receiver.head?.contentDisposition
        result.retryAfter = receiver.head?.retryAfter()
        result.bytesExpected = receiver.plan?.bytesExpected
        result.bytesThisAttempt = receiver.bytesThisAttempt
        result.responseBody = receiver.memory
        if request.keepsResponseHeaders { result.responseHeaders = receiver.head?.fields ?? [] }
        logger.debug("transfer finished", metadata: [
            "transfer.id": "\(id)", "http.status": "\(status)",
            "transfer.failure": .string(result.failure.map(String.init(describing:)) ?? "none"),
        ])

        guard let file = receiver.file else {
            onComplete(result)
            return
        }
        work.enter()
        let onComplete = onComplete
        guard checkComplete(&result, file: file) else {
            // Report only once the file is closed: the caller may delete it, and a deleted file
            // that is still open keeps its space, so a full disk would stay full.
            let unclosed = result
            file.abandon { length in
                var closed = unclosed
                closed.bytesOnDisk = length
                let result = closed
                queue.async {
                    onComplete(result)
                    work.leave()
                }
            }
            return
        }
        if receiver.segmentEnd == nil {
            // The connection is done with: the caller may give its slot to the next transfer
            // while the file is synced and hashed.
            onProgress(TransferProgress(bytesOnDisk: file.length, bytesExpected: result.bytesExpected,
                                        validator: result.validator, bodyComplete: true))
        }
        let unhashed = result
        file.finish { length, digest in
            var hashed = unhashed
            hashed.bytesOnDisk = length
            switch digest {
            case .success(let digests):
                hashed.sha256 = digests?.sha256
                hashed.extraDigest = digests?.extra
            case .failure(let failure): hashed.failure = failure
            }
            hashed.bodyComplete = hashed.failure == nil
            // Straight from the writer's (or digest's) queue: the caller hops to its own queue anyway.
            onComplete(hashed)
            work.leave()
        }
    }

    /// Whether the file now holds the whole representation (so it gets a digest and an fsync).
    private func checkComplete(_ result: inout TransferResult, file: FileSink) -> Bool {
        guard result.failure == nil else { return false }
        switch receiver.plan?.action {
        case .writeFile:
            if let partEnd = firstPartEnd, file.length == partEnd {
                // The part asked for is in; the rest of the representation is for the requests that follow.
                result.partReceived = true
                return false
            }
            if let expected = receiver.segmentEnd ?? receiver.plan?.bytesExpected, file.length != expected {
                // A 206 may legally carry less than asked for; the rest is still missing.
                result.failure = .network("the response ended at byte \(file.length) of \(expected)")
                return false
            }
            return true
        case .alreadyComplete:
            return true
        default:
            return false
        }
    }

    /// Where the response's part ends, when it is the first part the request asked for
    /// (`TransferRequest.firstPartLength`) and the representation goes on past it.
    private var firstPartEnd: Int64? {
        guard request.firstPartLength != nil, case .writeFile(startOver: false)? = receiver.plan?.action,
              case .bytes(_, let last, let total)? = receiver.head?.contentRange else { return nil }
        if let total, last + 1 >= total { return nil }
        return last + 1
    }

    private func failure(for outcome: Outcome) -> TransferFailure? {
        switch outcome {
        case .failed(let failure):
            return failure
        case .curl(let code):
            switch receiver.stopReason {
            case .failed(let failure): return failure
            case .bodyNotNeeded: return nil
            case nil: break
            }
            guard code != CURLE_OK else { return nil }
            let message = errorBuffer.pointee != 0
                ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
            if let remoteScheme, let failure = TransferFailure(remote: remoteScheme, curlCode: code, message: message, reply: ftpReply, uploading: bodyReader != nil) {
                // The file is shorter than the partial data: it changed, start over.
                if code == CURLE_BAD_DOWNLOAD_RESUME { receiver.file?.startOver() }
                return failure
            }
            var connectStatus = 0
            _ = fetchd_easy_getinfo_long(handle, CURLINFO_HTTP_CONNECTCODE, &connectStatus)
            return TransferFailure(curlCode: code, message: message, refusedAddress: refusedAddress,
                                   proxy: viaProxy ? ProxyAttempt(connectStatus: connectStatus) : nil, connected: isConnected)
        }
    }

    private func release() {
        curl_easy_cleanup(handle)
        bodyReader = nil
        curl_slist_free_all(requestHeaders)
        requestHeaders = nil
        curl_slist_free_all(pinnedAddress)
        pinnedAddress = nil
        errorBuffer.deallocate()
    }
}
