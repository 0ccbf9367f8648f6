/// The configured endpoint taken apart, and the URL of an object under it.
struct S3Endpoint: Equatable, Sendable {
    /// "http" or "https".
    var scheme: String
    /// `host[:port]` as configured, host in lower case.
    var authority: String
    /// "" or a path such as "/storage", without a trailing slash.
    var pathPrefix: String
    var hostIsIPAddress: Bool

    struct Problem: Error, Equatable {
        var message: String
    }

    static func parse(_ text: String) -> Result<S3Endpoint, Problem> {
        // Not echoed: what precedes the '@' may be a password.
        if text.contains("@") { return .failure(Problem(message: "endpoint: credentials in the URL are not supported")) }
        let fail = { (why: String) in Result<S3Endpoint, Problem>.failure(Problem(message: "endpoint \"\(text)\": \(why)")) }
        guard let schemeEnd = text.firstRange(of: "://") else { return fail("no scheme (http:// or https://)") }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return fail("the scheme must be http or https") }
        let rest = text[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" }.lowercased()
        var prefix = String(rest.dropFirst(authority.count))
        while prefix.hasSuffix("/") { prefix.removeLast() }

        guard !authority.isEmpty else { return fail("no host") }
        guard authority.utf8.allSatisfy(isAuthorityByte) else {
            return fail("the host may hold only letters, digits, '-', '.', '_', ':', '[' and ']'")
        }
        guard prefix.utf8.allSatisfy({ S3Encoding.isUnreserved($0) || $0 == UInt8(ascii: "/") }) else {
            return fail("the path may hold only letters, digits, '-', '.', '_', '~' and '/'")
        }
        let host: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return fail("an IPv6 address without ']'") }
            host = authority[...close]
            guard isPort(authority[authority.index(after: close)...]) else { return fail("a bad port") }
        } else {
            let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, !parts[0].isEmpty, parts.count == 1 || isPort(authority[parts[0].endIndex...]) else {
                return fail("a bad host or port")
            }
            host = parts[0]
        }
        let isIPv4 = host.allSatisfy { $0 == "." || $0.isASCII && $0.isNumber }
        return .success(S3Endpoint(scheme: scheme, authority: authority, pathPrefix: prefix,
                                   hostIsIPAddress: isIPv4 || host.hasPrefix("[")))
    }

    /// The object's URL without a query: path style `endpoint/bucket/key`, virtual-host style
    /// `scheme://bucket.host[:port]/key`, the key encoded segment by segment.
    func url(for location: ObjectLocation, addressing: ObjectStorageSettings.Addressing) -> Result<String, ObjectStorageFailure> {
        if let problem = Self.keyProblem(location.key) { return .failure(.refused(status: 0, code: "InvalidKey", message: problem)) }
        return url(ofBucket: location.bucket, addressing: addressing).map { $0 + S3Encoding.encodePath(location.key) }
    }

    /// The bucket's URL, ending in `/`: path style `endpoint/bucket/`, virtual-host style
    /// `scheme://bucket.host[:port]/`.
    func url(ofBucket bucket: String, addressing: ObjectStorageSettings.Addressing) -> Result<String, ObjectStorageFailure> {
        if let problem = Self.bucketProblem(bucket, addressing: addressing) {
            return .failure(.refused(status: 0, code: "InvalidBucketName", message: problem))
        }
        switch addressing {
        case .path: return .success("\(scheme)://\(authority)\(pathPrefix)/\(S3Encoding.encode(bucket))/")
        case .virtual: return .success("\(scheme)://\(bucket).\(authority)\(pathPrefix)/")
        }
    }

    /// S3 takes keys of 1 to 1024 UTF-8 bytes. Segments "." and ".." are refused: libcurl would
    /// resolve them away and store a different key.
    static func keyProblem(_ key: String) -> String? {
        if key.isEmpty { return "the key is empty" }
        if key.utf8.count > 1024 { return "the key is longer than 1024 bytes" }
        if key.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == "." || $0 == ".." }) {
            return "the key has a \".\" or \"..\" segment"
        }
        return nil
    }

    /// Path style encodes any bucket name but a slash or a dot segment; virtual-host style puts
    /// it in the host name, where only a DNS-style name `[a-z0-9.-]` fits.
    static func bucketProblem(_ bucket: String, addressing: ObjectStorageSettings.Addressing) -> String? {
        if bucket.isEmpty { return "the bucket name is empty" }
        switch addressing {
        case .path:
            if bucket.contains("/") || bucket == "." || bucket == ".." {
                return "the bucket name \"\(bucket)\" cannot be a path segment"
            }
        case .virtual:
            let allowed = bucket.utf8.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
            }
            if !allowed || bucket.hasPrefix(".") || bucket.hasSuffix(".") || bucket.contains("..") {
                return "the bucket name \"\(bucket)\" cannot be part of a host name"
            }
        }
        return nil
    }

    private static func isAuthorityByte(_ byte: UInt8) -> Bool {
        S3Encoding.isAlphanumeric(byte) || [UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"),
                                            UInt8(ascii: "["), UInt8(ascii: "]")].contains(byte)
    }

    /// "" or ":<1-65535>".
    private static func isPort(_ text: Substring) -> Bool {
        if text.isEmpty { return true }
        let digits = text.dropFirst()
        guard text.first == ":", (1...5).contains(digits.count), digits.utf8.allSatisfy({ (48...57).contains($0) }),
              let port = Int(digits) else { return false }
        return (1...65535).contains(port)
    }
}
