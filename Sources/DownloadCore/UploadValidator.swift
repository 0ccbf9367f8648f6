/// Turns a decoded `POST /uploads` body into a `NewUpload`, or into every field error at once. The
/// fields every job takes follow the downloads' rules (`SubmissionValidator.validateJobFields`).
public enum UploadValidator {
    static let knownFields: Set<String> = [
        "url", "source", "method", "protocol", "contentType", "deleteSource", "replyDestination", "checksum",
        "session", "earliestBeginDate", "discretionary", "priority", "expectedBytesToSend", "expectedBytesToReceive",
        "webhookURL", "headers", "metadata", "urlRefresh", "resourceTimeout", "maxBytesPerSecond", "auth",
    ]

    public static let maxContentTypeBytes = 256

    /// Headers an upload's request may not carry besides those a download's may not: its body's type
    /// is `contentType`.
    static let forbiddenHeaders: Set<String> = ["content-type"]

    public static func validate(_ body: JSONValue) -> Result<NewUpload, FieldErrors> {
        guard case .object(let object) = body else {
            return .failure(FieldErrors([FieldError(field: "", message: "the body must be a JSON object")]))
        }
        var errors: [FieldError] = []
        func fail(_ field: String, _ message: String) { errors.append(FieldError(field: field, message: message)) }
        var fields = BodyFields(object)

        var url = "", parsedURL = HTTPURL(scheme: "", host: "", port: 0), target: Destination?
        switch fields.take("url") {
        case nil, .null?: fail("url", "is required")
        case .string(let text)? where text.hasPrefix(Destination.objectScheme):
            url = text
            switch Destination.parse(text) {
            case .success(let parsed) where parsed.isDirectory: fail("url", "must name an object: s3://bucket/key, not a prefix")
            case .success(let parsed):
                target = parsed
                // Per-host limits count an object storage upload by its bucket.
                parsedURL = HTTPURL(scheme: "s3", host: parsed.bucket ?? "", port: 0)
            case .failure(let problem): fail("url", problem.message)
            }
        case .string(let text)?:
            url = text
            switch HTTPURL.parse(text, schemes: HTTPURL.downloadSchemes) {
            case .success(let parsed): parsedURL = parsed
            case .failure(let problem): fail("url", SubmissionValidator.describe(problem, schemes: HTTPURL.downloadSchemes))
            }
        case let other?: fail("url", "must be a string, not \(other.typeName)")
        }

        var source = Destination(stored: "")
        switch fields.take("source") {
        case nil, .null?: fail("source", "is required")
        case .string(let text)?:
            switch Destination.parse(text) {
            case .success(let parsed) where parsed.isDirectory || parsed.isObject:
                fail("source", "must name a file under the upload root")
            case .success(let parsed): source = parsed
            case .failure(let problem): fail("source", problem.message)
            }
        case let other?: fail("source", "must be a string, not \(other.typeName)")
        }

        var result = NewUpload(url: url, parsedURL: parsedURL, source: source)
        result.object = target
        if let value = fields.take("method"), value != .null {
            if case .string(let name) = value, let method = UploadMethod(rawValue: name) {
                result.method = method
            } else {
                fail("method", "must be PUT or POST")
            }
        }
        if let value = fields.take("protocol"), value != .null {
            switch value {
            case .string(UploadProtocol.plain.rawValue): result.uploadProtocol = .plain
            case .string(UploadProtocol.tus.rawValue): result.uploadProtocol = .tus
            default: fail("protocol", "must be plain or tus")
            }
        }
        if let value = fields.take("contentType"), value != .null {
            if case .string(let text) = value, !text.isEmpty, text.utf8.count <= maxContentTypeBytes,
               text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
                result.contentType = text
            } else {
                fail("contentType", "must be a media type of 1–\(maxContentTypeBytes) printable ASCII characters")
            }
        }
        switch fields.take("replyDestination") {
        case nil, .null?: break
        case .string(let text)?:
            switch Destination.parse(text) {
            case .success(let parsed) where parsed.isDirectory || parsed.isObject:
                fail("replyDestination", "must name a file under the download root")
            case .success(let parsed): result.replyDestination = parsed
            case .failure(let problem): fail("replyDestination", problem.message)
            }
        case let other?: fail("replyDestination", "must be a string, not \(other.typeName)")
        }
        if let value = fields.take("checksum"), value != .null {
            switch SubmissionValidator.checksum(value) {
            case .success(let checksum): result.checksum = checksum
            case .failure(let problem): fail("checksum", problem.message)
            }
        }
        if let value = fields.take("deleteSource") {
            if case .bool(let flag) = value { result.deleteSource = flag } else { fail("deleteSource", "must be a boolean") }
        }
        validateFileServerFields(&fields, into: &result, fail: fail)
        SubmissionValidator.validateJobFields(&fields, into: &result, fail: fail)
        if let header = result.headers.first(where: { forbiddenHeaders.contains($0.name.lowercased()) }) {
            fail("headers", "'\(header.name)' may not be set: give contentType")
        }
        if result.replyDestination != nil, target != nil || result.uploadProtocol != .plain || result.parsedURL.isFileServer {
            fail("replyDestination", "takes the answer of a plain upload to an http(s) URL only")
        }
        if target != nil {
            if result.method != .put { fail("method", "must be PUT for an s3:// URL") }
            if result.uploadProtocol != .plain { fail("protocol", "must be plain for an s3:// URL (a multipart upload)") }
            if !result.headers.isEmpty { fail("headers", "are not sent to the object storage") }
        }
        errors.insert(contentsOf: fields.unknown(knownFields), at: 0)
        return errors.isEmpty ? .success(result) : .failure(FieldErrors(errors))
    }
}
