/// A watch's fields, validated: `POST /watches`'s body, or a stored watch's fields after a
/// `PATCH`. The download fields are held to the download rules (`SubmissionValidator`), so a check
/// is exactly the job `POST /downloads` would make of them.
public struct WatchSpec: Sendable, Equatable {
    /// The fields as given.
    public var fields: [String: JSONValue]
    public var timing: WatchTiming
    /// What each check downloads, and how.
    public var download: NewDownload

    /// The fields a watch takes: `interval` or `schedule`, and these download fields.
    public static let downloadFields: Set<String> = [
        "url", "destination", "headers", "session", "priority", "discretionary", "webhookURL", "metadata",
        "maxBytesPerSecond", "checksumURL", "mirrors",
    ]

    /// Judges a body. `minInterval` (milliseconds) is the shortest `interval` taken: a stored
    /// watch is read back with 0, whatever the setting has become since.
    public static func validate(_ body: JSONValue, minInterval: Int64) -> Result<WatchSpec, FieldErrors> {
        guard case .object(let fields) = body else {
            return .failure(FieldErrors([FieldError(field: "", message: "the body must be a JSON object")]))
        }
        var errors: [FieldError] = []
        var downloadBody: [String: JSONValue] = [:]
        for (name, value) in fields where name != "interval" && name != "schedule" {
            if downloadFields.contains(name) { downloadBody[name] = value } else { errors.append(FieldError(field: name, message: "unknown field")) }
        }
        errors.sort { Array($0.field.utf8).lexicographicallyPrecedes(Array($1.field.utf8)) }
        var timing: WatchTiming?
        switch (fields["interval"], fields["schedule"]) {
        case (nil, nil), (.null?, .null?), (nil, .null?), (.null?, nil):
            errors.append(FieldError(field: "interval", message: "give an interval or a schedule"))
        case (let interval?, let schedule?) where interval != .null && schedule != .null:
            errors.append(FieldError(field: "schedule", message: "give either an interval or a schedule, not both"))
        case (let interval?, _) where interval != .null:
            guard case .string(let text) = interval, let duration = Units.duration(text) else {
                errors.append(FieldError(field: "interval", message: "must be a duration, like 5m, 1h or 1d"))
                break
            }
            let millis = duration.wholeMilliseconds
            if millis < max(minInterval, 1) {
                errors.append(FieldError(field: "interval", message: "must be at least \(Self.describe(milliseconds: max(minInterval, 1))) (FETCHD_WATCH_MIN_INTERVAL)"))
            } else {
                timing = .interval(milliseconds: millis)
            }
        case (_, let schedule?):
            guard case .string(let text) = schedule else {
                errors.append(FieldError(field: "schedule", message: "must be a string: a five-field cron expression in UTC"))
                break
            }
            switch CronExpression.parse(text) {
            case .success(let cron) where cron.next(after: 0) != nil: timing = .schedule(cron)
            case .success: errors.append(FieldError(field: "schedule", message: "names no time that ever comes"))
            case .failure(let problem): errors.append(FieldError(field: "schedule", message: problem.message))
            }
        default:
            break
        }
        var download: NewDownload?
        switch SubmissionValidator.validate(.object(downloadBody)) {
        case .success(var value):
            // Each change replaces the file: a check writes over the one before.
            value.overwrite = true
            download = value
        case .failure(let failure): errors += failure.errors
        }
        guard errors.isEmpty, let timing, let download else { return .failure(FieldErrors(errors)) }
        return .success(WatchSpec(fields: fields, timing: timing, download: download))
    }

    /// `90000` as `90s`, `60000` as `1m`: a duration as settings take it.
    static func describe(milliseconds: Int64) -> String {
        for (unit, size) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)] where milliseconds % size == 0 {
            return "\(milliseconds / size)\(unit)"
        }
        return "\(milliseconds)ms"
    }

    /// The fields a `PATCH` may not change.
    public static let fixedFields: Set<String> = ["destination"]

    /// `fields` with a `PATCH` merged in (RFC 7396): `headers` and `mirrors` are replaced whole,
    /// `metadata` merges member by member; `interval` and `schedule` replace each other.
    public static func patched(_ fields: [String: JSONValue], with patch: [String: JSONValue]) -> [String: JSONValue] {
        var merged = fields
        for (name, value) in patch {
            if name == "metadata", let current = merged[name] {
                merged[name] = current.merged(with: value)
            } else {
                merged[name] = value
            }
            if value != .null, name == "interval" { merged["schedule"] = nil }
            if value != .null, name == "schedule" { merged["interval"] = nil }
        }
        return merged.filter { $0.value != .null }
    }

    /// The check job due at `runAt`: the download these fields make, carrying `link`.
    public func check(id: String, link: WatchLink, runAt: Int64, now: Int64) -> Download {
        var submission = download
        submission.earliestBeginDate = runAt > now ? runAt : nil
        var job = submission.makeDownload(id: id, now: now)
        job.watch = link
        return job
    }
}

extension Watch {
    /// The watch's fields, read back as they were judged when stored; nil if they no longer pass
    /// (a rule tightened since), which stops its checks until a `PATCH` mends them.
    public var validSpec: WatchSpec? {
        try? WatchSpec.validate(.object(spec), minInterval: 0).get()
    }

    /// The first check time strictly after `now`, spread by the watch's own share.
    public func nextCheck(after now: Int64) -> Int64? {
        validSpec?.timing.nextCheck(after: now, anchor: createdAt, spread: WatchTiming.spread(of: id))
    }
}
