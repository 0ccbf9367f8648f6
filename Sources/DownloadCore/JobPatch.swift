/// A validated `PATCH /downloads/{id}` body: a JSON merge patch (RFC 7396) of the fields a client
/// may change after submit. An absent field is left alone; `null` clears an optional field and
/// puts `priority` and `discretionary` back to their defaults; `metadata` merges (RFC 7396, member
/// by member) and `headers` is replaced whole.
public struct JobPatch: Sendable, Equatable {
    /// A field's new value: absent from the patch, cleared by `null`, or set.
    public enum Change<Value: Sendable & Equatable>: Sendable, Equatable {
        case keep, clear, set(Value)
    }

    public var url: Change<HTTPURL.Parsed> = .keep
    public var headers: Change<[OriginHeader]> = .keep
    public var priority: Change<Double> = .keep
    public var earliestBeginDate: Change<Int64> = .keep
    public var discretionary: Change<Bool> = .keep
    public var webhookURL: Change<String> = .keep
    public var metadata: Change<JSONValue> = .keep
    public var mirrors: Change<[String]> = .keep
    public var maxBytesPerSecond: Change<Int64> = .keep

    public static let patchable: Set<String> = [
        "url", "headers", "priority", "earliestBeginDate", "discretionary", "webhookURL", "metadata",
        "mirrors", "maxBytesPerSecond",
    ]

    public init() {}

    /// Whether the patch changes what is asked of the origin, or how fast: a running job must
    /// start a new attempt (which goes on from its partial data).
    public var changesRequest: Bool { url != .keep || headers != .keep || mirrors != .keep || maxBytesPerSecond != .keep }

    public static func parse(_ body: JSONValue) -> Result<JobPatch, FieldErrors> {
        guard case .object(let fields) = body else {
            return .failure(FieldErrors([FieldError(field: "", message: "the body must be a JSON object (a merge patch)")]))
        }
        var patch = JobPatch()
        var errors: [FieldError] = []
        func read<Value>(_ name: String, _ parse: (JSONValue) -> Result<Value, ValidationProblem>) -> Change<Value> {
            switch fields[name] {
            case nil: return .keep
            case .null?: return .clear
            case let value?:
                switch parse(value) {
                case .success(let parsed): return .set(parsed)
                case .failure(let problem):
                    errors.append(FieldError(field: name, message: problem.message))
                    return .keep
                }
            }
        }
        for name in fields.keys.sortedByUTF8() where !patchable.contains(name) {
            errors.append(FieldError(field: name, message: "cannot be changed after submit"))
        }
        patch.url = read("url") { value in
            guard case .string(let text) = value else { return .failure(ValidationProblem("must be a string")) }
            return HTTPURL.parse(text, schemes: HTTPURL.downloadSchemes).map { HTTPURL.Parsed(text: text, url: $0) }
                .mapError { ValidationProblem(SubmissionValidator.describe($0, schemes: HTTPURL.downloadSchemes)) }
        }
        if patch.url == .clear { errors.append(FieldError(field: "url", message: "cannot be removed")) }
        patch.headers = read("headers", SubmissionValidator.validateHeaders)
        patch.priority = read("priority", SubmissionValidator.priority)
        patch.earliestBeginDate = read("earliestBeginDate", SubmissionValidator.date)
        patch.discretionary = read("discretionary") { value in
            guard case .bool(let flag) = value else { return .failure(ValidationProblem("must be a boolean")) }
            return .success(flag)
        }
        patch.webhookURL = read("webhookURL", SubmissionValidator.webhookURL)
        patch.metadata = read("metadata") { value in
            guard case .object = value else { return .failure(ValidationProblem("must be a JSON object")) }
            return .success(value)
        }
        patch.mirrors = read("mirrors", SubmissionValidator.mirrors)
        patch.maxBytesPerSecond = read("maxBytesPerSecond", SubmissionValidator.maxBytesPerSecond)
        return errors.isEmpty ? .success(patch) : .failure(FieldErrors(errors))
    }

    /// The job with the patch applied; `now` decides when a queued job is due again. Fails when
    /// the merged metadata is too large (or the stored metadata does not parse).
    public func applied(to job: Download, now: Int64) -> Result<Download, FieldErrors> {
        var changed = job
        switch url {
        case .keep, .clear: break
        case .set(let parsed):
            changed.url = parsed.text
            changed.hostKey = parsed.url.hostKey
            // A job waiting for a new URL (URL refresh) has it: it is due at once.
            changed.awaitingURLSince = nil
        }
        if case .set(let value) = headers { changed.headers = value } else if headers == .clear { changed.headers = [] }
        changed.priority = priority.value(or: job.priority, cleared: 0.5)
        changed.discretionary = discretionary.value(or: job.discretionary, cleared: false)
        changed.earliestBeginDate = earliestBeginDate.optional(or: job.earliestBeginDate)
        changed.webhookURL = webhookURL.optional(or: job.webhookURL)
        changed.maxBytesPerSecond = maxBytesPerSecond.optional(or: job.maxBytesPerSecond)
        // Attempts keep their place in the round (`mirrorIndex`), which wraps round a shorter list.
        changed.mirrors = mirrors.optional(or: job.mirrors) ?? []
        switch metadata {
        case .keep: break
        case .clear: changed.metadata = nil
        case .set(let patch):
            let stored: JSONValue
            do {
                stored = try job.metadata.map { try JSONParser.parse(Array($0.utf8)) } ?? .object([:])
            } catch {
                return .failure(FieldErrors([FieldError(field: "metadata", message: "the stored metadata cannot be read: \(error)")]))
            }
            switch SubmissionValidator.metadata(stored.merged(with: patch)) {
            case .success(let text): changed.metadata = text == "{}" ? nil : text
            case .failure(let problem): return .failure(FieldErrors([FieldError(field: "metadata", message: problem.message)]))
            }
        }
        changed.runAt = changed.awaitingURLSince == nil
            ? max(now, changed.nextAttemptAt ?? now, changed.earliestBeginDate ?? now)
            : job.runAt  // still waiting for a URL: the refresh deadline stands
        return .success(changed)
    }
}

extension JobPatch.Change {
    func value(or current: Value, cleared: Value) -> Value {
        switch self {
        case .keep: return current
        case .clear: return cleared
        case .set(let value): return value
        }
    }

    func optional(or current: Value?) -> Value? {
        switch self {
        case .keep: return current
        case .clear: return nil
        case .set(let value): return value
        }
    }
}

extension HTTPURL {
    /// A URL as given and as parsed.
    public struct Parsed: Sendable, Equatable {
        public var text: String
        public var url: HTTPURL
    }
}

extension JSONValue {
    /// RFC 7396 MergePatch(self, patch): members of an object patch merge in, `null` removes one,
    /// anything else replaces the whole.
    public func merged(with patch: JSONValue) -> JSONValue {
        guard case .object(let changes) = patch else { return patch }
        var members: [String: JSONValue] = [:]
        if case .object(let current) = self { members = current }
        for (key, change) in changes {
            if change == .null {
                members[key] = nil
            } else {
                members[key] = (members[key] ?? .null).merged(with: change)
            }
        }
        return .object(members)
    }
}
