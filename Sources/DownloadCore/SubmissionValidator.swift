/// Turns a decoded `POST /downloads` body into a `NewDownload`, or into every field error at once.
public enum SubmissionValidator {
    public static let maxHeaders = 50
    public static let maxHeaderValueBytes = 8192
    public static let maxSessionLength = 128

    /// Origin request headers a client may not set: framing, hop-by-hop, and the ones fetchd owns.
    static let forbiddenHeaders: Set<String> = [
        "host", "content-length", "transfer-encoding", "range", "if-range", "connection", "keep-alive",
        "te", "trailer", "upgrade", "proxy-authorization", "proxy-connection", "expect",
    ]

    static let knownFields: Set<String> = [
        "url", "destination", "session", "earliestBeginDate", "discretionary", "priority",
        "expectedBytesToSend", "expectedBytesToReceive", "webhookURL", "headers", "sha256", "overwrite", "metadata", "urlRefresh",
        "onConflict", "checksum", "checksumURL", "resourceTimeout",
        "mirrors", "connections", "maxBytesPerSecond", "auth",
    ]

    public static let maxMirrors = 8
    public static let connectionsRange = 1...16
    public static let minBytesPerSecond: Int64 = 1024

    /// `metadata` may take this many bytes as JSON text.
    public static let maxMetadataBytes = 4096

    public static func validate(_ body: JSONValue) -> Result<NewDownload, FieldErrors> {
        guard case .object(let object) = body else {
            return .failure(FieldErrors([FieldError(field: "", message: "the body must be a JSON object")]))
        }
        var errors: [FieldError] = []
        func fail(_ field: String, _ message: String) { errors.append(FieldError(field: field, message: message)) }
        var fields = BodyFields(object)

        var parsedURL: HTTPURL?
        var url = ""
        switch fields.take("url") {
        case nil, .null?: fail("url", "is required")
        case .string(let text)?:
            url = text
            switch HTTPURL.parse(text, schemes: HTTPURL.downloadSchemes) {
            case .success(let parsed): parsedURL = parsed
            case .failure(let problem): fail("url", describe(problem, schemes: HTTPURL.downloadSchemes))
            }
        case let other?: fail("url", "must be a string, not \(other.typeName)")
        }

        var destination = Destination(stored: "")
        switch fields.take("destination") {
        case nil, .null?: fail("destination", "is required")
        case .string(let text)?:
            switch Destination.parse(text) {
            case .success(let parsed): destination = parsed
            case .failure(let problem): fail("destination", problem.message)
            }
        case let other?: fail("destination", "must be a string, not \(other.typeName)")
        }

        var result = NewDownload(url: url, parsedURL: parsedURL ?? HTTPURL(scheme: "", host: "", port: 0), destination: destination)

        validateJobFields(&fields, into: &result, fail: fail)
        if let value = fields.take("overwrite") {
            if case .bool(let flag) = value { result.overwrite = flag } else { fail("overwrite", "must be a boolean") }
        }
        if let value = fields.take("sha256"), value != .null {
            if case .string(let text) = value, text.utf8.count == 64, text.utf8.allSatisfy(isHexDigit) {
                result.sha256 = text.lowercased()
            } else {
                fail("sha256", "must be 64 hexadecimal characters")
            }
        }
        validateFileFields(&fields, into: &result, fail: fail)
        if let value = fields.take("auth"), value != .null {
            switch auth(value, for: parsedURL) {
            case .success(let (username, password)): result.url = URLUserInfo.replacing(in: url, username: username, password: password)
            case .failure(let problem): fail("auth", problem.message)
            }
        }
        if let value = fields.take("mirrors"), value != .null {
            switch mirrors(value) {
            case .success(let urls): result.mirrors = urls
            case .failure(let problem): fail("mirrors", problem.message)
            }
        }
        if let value = fields.take("connections"), value != .null {
            if case .integer(let count) = value, connectionsRange.contains(Int(clamping: count)) {
                result.connections = Int(count)
            } else {
                fail("connections", "must be an integer from \(connectionsRange.lowerBound) to \(connectionsRange.upperBound)")
            }
        }
        errors.insert(contentsOf: fields.unknown(knownFields), at: 0)
        return errors.isEmpty ? .success(result) : .failure(FieldErrors(errors))
    }

    /// The fields every job takes, download or upload, with the same rules: its session, when and
    /// how it is scheduled, what it expects to move, where it reports, its headers and its limits.
    /// Each is taken from `fields` once.
    static func validateJobFields<Job: SubmittedJob>(_ fields: inout BodyFields, into result: inout Job, fail: (String, String) -> Void) {
        if let value = fields.take("session") {
            if case .string(let text) = value, isValidSession(text) {
                result.session = text
            } else {
                fail("session", "must be 1–\(maxSessionLength) characters of A–Z, a–z, 0–9, '.', '_' or '-'")
            }
        }
        if let value = fields.take("earliestBeginDate"), value != .null {
            switch date(value) {
            case .success(let millis): result.earliestBeginDate = millis
            case .failure(let problem): fail("earliestBeginDate", problem.message)
            }
        }
        if let value = fields.take("discretionary") {
            if case .bool(let flag) = value { result.discretionary = flag } else { fail("discretionary", "must be a boolean") }
        }
        if let value = fields.take("urlRefresh") {
            if case .bool(let flag) = value { result.urlRefresh = flag } else { fail("urlRefresh", "must be a boolean") }
        }
        if let value = fields.take("priority") {
            switch priority(value) {
            case .success(let number): result.priority = number
            case .failure(let problem): fail("priority", problem.message)
            }
        }
        for name in ["expectedBytesToSend", "expectedBytesToReceive"] {
            guard let value = fields.take(name), value != .null else { continue }
            guard case .integer(let count) = value, count >= 0 else {
                fail(name, "must be an integer ≥ 0")
                continue
            }
            if name == "expectedBytesToSend" { result.expectedBytesToSend = count } else { result.expectedBytesToReceive = count }
        }
        if let value = fields.take("webhookURL"), value != .null {
            switch webhookURL(value) {
            case .success(let text): result.webhookURL = text
            case .failure(let problem): fail("webhookURL", problem.message)
            }
        }
        if let value = fields.take("metadata"), value != .null {
            switch metadata(value) {
            case .success(let text): result.metadata = text
            case .failure(let problem): fail("metadata", problem.message)
            }
        }
        if let value = fields.take("headers"), value != .null {
            switch validateHeaders(value) {
            case .success(let headers): result.headers = headers
            case .failure(let message): fail("headers", message.message)
            }
        }
        if let value = fields.take("maxBytesPerSecond"), value != .null {
            switch maxBytesPerSecond(value) {
            case .success(let rate): result.maxBytesPerSecond = rate
            case .failure(let problem): fail("maxBytesPerSecond", problem.message)
            }
        }
        if let value = fields.take("resourceTimeout"), value != .null {
            if case .string(let text) = value, let limit = Units.duration(text), limit > .zero {
                result.resourceTimeout = text
            } else {
                fail("resourceTimeout", "must be a duration greater than zero, like 90s, 30m or 2h")
            }
        }
    }

    /// The values of `onConflict`.
    public static let conflictPolicies = ["fail", "overwrite", "rename"]

    /// `onConflict`, `checksum` and `checksumURL`, and how they agree with `overwrite` and `sha256`.
    /// Each is taken from `fields` once; `overwrite`, already taken, is looked at again.
    static func validateFileFields(_ fields: inout BodyFields, into result: inout NewDownload, fail: (String, String) -> Void) {
        if let value = fields.take("onConflict"), value != .null {
            if case .string(let policy) = value, conflictPolicies.contains(policy) {
                // `fail` is `overwrite: false`, `overwrite` is `overwrite: true`; rename replaces nothing.
                if case .bool(let overwrite)? = fields.all["overwrite"], overwrite != (policy == "overwrite") {
                    fail("onConflict", "contradicts \"overwrite\": \(overwrite)")
                }
                result.overwrite = policy == "overwrite"
                result.renameOnConflict = policy == "rename"
            } else {
                fail("onConflict", "must be one of \(conflictPolicies.joined(separator: ", "))")
            }
        }
        if let value = fields.take("checksum"), value != .null {
            switch checksum(value) {
            case .success(let checksum):
                result.checksum = checksum
                if checksum.algorithm == .sha256, let sha256 = result.sha256, sha256 != checksum.hex {
                    fail("checksum", "contradicts \"sha256\"")
                }
            case .failure(let problem): fail("checksum", problem.message)
            }
        }
        if let value = fields.take("checksumURL"), value != .null {
            switch webhookURL(value) {
            case .success(let text):
                result.checksumURL = text
                if result.checksum != nil || result.sha256 != nil {
                    fail("checksumURL", "give either a digest (\"checksum\" or \"sha256\") or a digest file, not both")
                }
            case .failure(let problem): fail("checksumURL", problem.message)
            }
        }
    }

    static func checksum(_ value: JSONValue) -> Result<Checksum, ValidationProblem> {
        guard case .string(let text) = value else { return .failure(ValidationProblem("must be a string \"<alg>:<hex>\"")) }
        return Checksum.parse(text)
    }

    // MARK: Fields a PATCH may change too (one rule each, for both)

    static func date(_ value: JSONValue) -> Result<Int64, ValidationProblem> {
        guard case .string(let text) = value, let millis = RFC3339.parse(text) else {
            return .failure(ValidationProblem("must be an RFC 3339 date-time, e.g. 2026-11-21T10:00:00Z"))
        }
        return .success(millis)
    }

    static func priority(_ value: JSONValue) -> Result<Double, ValidationProblem> {
        let number: Double? = switch value {
        case .integer(let i): Double(i)
        case .number(let d): d
        default: nil
        }
        guard let number, number >= 0, number <= 1 else { return .failure(ValidationProblem("must be a number from 0.0 to 1.0")) }
        return .success(number)
    }

    static func webhookURL(_ value: JSONValue) -> Result<String, ValidationProblem> {
        guard case .string(let text) = value else { return .failure(ValidationProblem("must be a string")) }
        if case .failure(let problem) = HTTPURL.parse(text) { return .failure(ValidationProblem(describe(problem))) }
        return .success(text)
    }

    /// `{"username", "password"}` for a file server's URL; never echoed in a message.
    static func auth(_ value: JSONValue, for url: HTTPURL?) -> Result<(String, String), ValidationProblem> {
        guard case .object(let object) = value, object.count == 2,
              case .string(let username)? = object["username"], case .string(let password)? = object["password"]
        else { return .failure(ValidationProblem("must be an object {\"username\": string, \"password\": string}")) }
        guard url?.isFileServer != false else { return .failure(ValidationProblem("is for ftp://, ftps:// and sftp:// URLs only")) }
        guard !username.isEmpty else { return .failure(ValidationProblem("username must not be empty")) }
        return .success((username, password))
    }

    /// Up to `maxMirrors` absolute URLs, of the schemes a download's `url` may have.
    static func mirrors(_ value: JSONValue) -> Result<[String], ValidationProblem> {
        guard case .array(let items) = value else { return .failure(ValidationProblem("must be an array of URLs")) }
        guard items.count <= maxMirrors else { return .failure(ValidationProblem("at most \(maxMirrors) URLs")) }
        var urls: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let text) = item else { return .failure(ValidationProblem("item \(index) must be a string")) }
            if case .failure(let problem) = HTTPURL.parse(text, schemes: HTTPURL.downloadSchemes) {
                return .failure(ValidationProblem("item \(index) \(describe(problem, schemes: HTTPURL.downloadSchemes))"))
            }
            urls.append(text)
        }
        return .success(urls)
    }

    static func maxBytesPerSecond(_ value: JSONValue) -> Result<Int64, ValidationProblem> {
        guard case .integer(let rate) = value, rate >= minBytesPerSecond else {
            return .failure(ValidationProblem("must be an integer ≥ \(minBytesPerSecond) (bytes per second)"))
        }
        return .success(rate)
    }

    /// A JSON object of at most `maxMetadataBytes` as text; kept as that text.
    static func metadata(_ value: JSONValue) -> Result<String, ValidationProblem> {
        guard case .object = value else { return .failure(ValidationProblem("must be a JSON object")) }
        let text = value.jsonText
        guard text.utf8.count <= maxMetadataBytes else {
            return .failure(ValidationProblem("must be at most \(maxMetadataBytes) bytes as JSON (it is \(text.utf8.count))"))
        }
        return .success(text)
    }

    public static func isValidSession(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maxSessionLength && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    static func validateHeaders(_ value: JSONValue) -> Result<[OriginHeader], ValidationProblem> {
        guard case .object(let object) = value else { return .failure(ValidationProblem("must be an object of string → string")) }
        guard object.count <= maxHeaders else { return .failure(ValidationProblem("at most \(maxHeaders) headers")) }
        var headers: [OriginHeader] = []
        for name in object.keys.sortedByUTF8() {
            guard case .string(let headerValue)? = object[name] else {
                return .failure(ValidationProblem("the value of '\(name)' must be a string"))
            }
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenCharacter) else {
                return .failure(ValidationProblem("'\(name)' is not a valid header name"))
            }
            guard !forbiddenHeaders.contains(name.lowercased()) else {
                return .failure(ValidationProblem("'\(name)' may not be set: fetchd controls it"))
            }
            // Values are never echoed: the message names the header, not its value.
            guard headerValue.utf8.count <= maxHeaderValueBytes,
                  !headerValue.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                return .failure(ValidationProblem("the value of '\(name)' must have no CR, LF or NUL and be at most \(maxHeaderValueBytes) bytes"))
            }
            headers.append(OriginHeader(name: name, value: headerValue))
        }
        return .success(headers)
    }

    static func describe(_ problem: HTTPURL.Problem, schemes: [String] = HTTPURL.webSchemes) -> String {
        let allowed = schemes.joined(separator: ", ")
        switch problem {
        case .notAbsolute: return "must be an absolute URL (\(allowed))"
        case .unsupportedScheme(let scheme): return "scheme '\(scheme)' is not supported: use one of \(allowed)"
        case .missingHost: return "must have a host"
        case .invalidCharacter: return "must not contain spaces, control or non-ASCII characters (percent-encode them)"
        case .invalidPort: return "has an invalid port"
        case .tooLong: return "must be at most \(HTTPURL.maxLength) bytes"
        }
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    /// RFC 9110 tchar.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        if (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) { return true }
        return "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}
