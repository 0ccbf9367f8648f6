import CCurl

/// The request's method, its body (from memory or read from a file) and its signature.
extension EasyTransfer {
    func configureMethod() throws(TransferFailure) {
        switch request.method {
        case .get:
            break
        case .head:
            try set(CURLOPT_NOBODY, 1)
        case .delete, .options:
            try set(CURLOPT_CUSTOMREQUEST, request.method.rawValue)
        case .post:
            if let range = request.bodyFile {
                try setBody(from: FileBodyReader(range), method: .post)
            } else {
                try setBodyFromMemory()
            }
        case .put, .patch:
            if let range = request.bodyFile {
                try setBody(from: FileBodyReader(range), method: .put)
            } else {
                try setBodyFromMemory()
            }
            // CURLOPT_UPLOAD sends a PUT, and a body from memory goes as a POST: either is renamed.
            if request.method == .patch || request.bodyFile == nil { try set(CURLOPT_CUSTOMREQUEST, request.method.rawValue) }
        }
        if let signing = request.signing {
            try set(CURLOPT_AWS_SIGV4, "aws:amz:\(signing.region):\(signing.service)")
            try set(CURLOPT_USERPWD, "\(signing.accessKeyID):\(signing.secretAccessKey)")
        }
    }

    /// Bytes curl asks the read callback for at once: 1 MiB, 16 times its default, which took a PUT
    /// of 512 MiB to nginx on loopback from 294 to 508-781 MiB/s (Benchmarks, uploads); a capped
    /// upload's about 1/10 s of its cap (curl's own minimum is 16 KiB), so it goes evenly.
    static func uploadBufferSize(throttledTo speed: Int64?) -> Int {
        let full = 1 << 20
        guard let speed else { return full }
        return Int(min(Int64(full), max(16 << 10, speed / 10)))
    }

    /// As a POST body (COPYPOSTFIELDS copies it, so it need not outlive this call).
    private func setBodyFromMemory() throws(TransferFailure) {
        try set(CURLOPT_POST, 1)
        try set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(request.body.count))
        if request.body.isEmpty { return try set(CURLOPT_COPYPOSTFIELDS, "") }
        let code = request.body.withUnsafeBytes { body in
            fetchd_easy_setopt_ptr(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: body.baseAddress))
        }
        try check(code, CURLOPT_COPYPOSTFIELDS)
    }

    /// A PUT (CURLOPT_UPLOAD) or a POST whose body curl reads from `reader` as it sends it.
    private func setBody(from reader: FileBodyReader, method: TransferRequest.Method) throws(TransferFailure) {
        bodyReader = reader
        try set(CURLOPT_UPLOAD_BUFFERSIZE, Self.uploadBufferSize(throttledTo: request.maxSpeedBytesPerSecond))
        if method == .post {
            try set(CURLOPT_POST, 1)
            try set(CURLOPT_POSTFIELDSIZE_LARGE, offset: reader.length)
        } else {
            try set(CURLOPT_UPLOAD, 1)
            try set(CURLOPT_INFILESIZE_LARGE, offset: reader.length)
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        try set(CURLOPT_READDATA, pointer: me)
        try check(fetchd_easy_setopt_read(handle, CURLOPT_READFUNCTION) { buffer, size, count, userdata in
            guard let userdata, let buffer else { return Int(CURL_READFUNC_ABORT) }
            return Unmanaged<EasyTransfer>.fromOpaque(userdata).takeUnretainedValue()
                .sendBody(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
        }, CURLOPT_READFUNCTION)
        try set(CURLOPT_SEEKDATA, pointer: me)
        try check(fetchd_easy_setopt_seek(handle, CURLOPT_SEEKFUNCTION) { userdata, offset, origin in
            guard let userdata, origin == SEEK_SET,
                  Unmanaged<EasyTransfer>.fromOpaque(userdata).takeUnretainedValue().bodyReader?.seek(to: Int64(offset)) == true
            else { return CURL_SEEKFUNC_CANTSEEK }
            return CURL_SEEKFUNC_OK
        }, CURLOPT_SEEKFUNCTION)
    }
}
