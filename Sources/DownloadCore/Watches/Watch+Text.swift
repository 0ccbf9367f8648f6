extension Watch {
    /// The watch as the store keeps it: one JSON object of its fields as given and its state.
    public var text: String {
        var members: [String: JSONValue] = [
            "spec": .object(spec), "state": .string(state.rawValue), "checks": .integer(Int64(checks)),
            "changes": .integer(Int64(changes)), "createdAt": .integer(createdAt),
        ]
        let optional: [(String, JSONValue?)] = [
            ("checkID", checkID.map(JSONValue.string)), ("nextCheckAt", nextCheckAt.map(JSONValue.integer)),
            ("lastCheckedAt", lastCheckedAt.map(JSONValue.integer)), ("lastChangedAt", lastChangedAt.map(JSONValue.integer)),
            ("lastResult", lastResult.map { .string($0.rawValue) }), ("lastErrorCode", lastError.map { .string($0.code) }),
            ("lastErrorMessage", lastError.map { .string($0.message) }), ("etag", etag.map(JSONValue.string)),
            ("lastModified", lastModified.map(JSONValue.string)), ("sha256", sha256.map(JSONValue.string)),
        ]
        for case let (name, value?) in optional { members[name] = value }
        return JSONValue.object(members).jsonText
    }

    /// What `text` wrote, with the id and revision the store keeps beside it; nil for anything else.
    public static func parse(_ text: String, id: String, revision: Int64) -> Watch? {
        // Text that is not JSON is no watch: nil, which the store reports as unreadable.
        guard case .object(let members)? = try? JSONParser.parse(Array(text.utf8)),
              case .object(let spec)? = members["spec"], case .string(let destinationText)? = spec["destination"],
              case .success(let destination) = Destination.parse(destinationText),
              case .string(let stateName)? = members["state"], let state = WatchState(rawValue: stateName),
              case .integer(let checks)? = members["checks"], case .integer(let changes)? = members["changes"],
              case .integer(let createdAt)? = members["createdAt"]
        else { return nil }
        func string(_ name: String) -> String? {
            if case .string(let value)? = members[name] { value } else { nil }
        }
        func integer(_ name: String) -> Int64? {
            if case .integer(let value)? = members[name] { value } else { nil }
        }
        var watch = Watch(id: id, spec: spec, destination: destination, createdAt: createdAt)
        watch.state = state
        watch.checks = Int(checks)
        watch.changes = Int(changes)
        watch.revision = revision
        watch.checkID = string("checkID")
        watch.nextCheckAt = integer("nextCheckAt")
        watch.lastCheckedAt = integer("lastCheckedAt")
        watch.lastChangedAt = integer("lastChangedAt")
        watch.lastResult = string("lastResult").flatMap(WatchResult.init(rawValue:))
        watch.lastError = string("lastErrorCode").map { DownloadError(code: $0, message: string("lastErrorMessage") ?? "") }
        watch.etag = string("etag")
        watch.lastModified = string("lastModified")
        watch.sha256 = string("sha256")
        return watch
    }
}

extension WatchLink {
    /// The link as a check job's row keeps it: one JSON object.
    public var text: String {
        var members: [String: JSONValue] = ["id": .string(id)]
        if let etag { members["etag"] = .string(etag) }
        if let lastModified { members["lastModified"] = .string(lastModified) }
        if let sha256 { members["sha256"] = .string(sha256) }
        return JSONValue.object(members).jsonText
    }

    public static func parse(_ text: String) -> WatchLink? {
        // Text that is not JSON is no link: nil, which the column reports as unreadable.
        guard case .object(let members)? = try? JSONParser.parse(Array(text.utf8)), case .string(let id)? = members["id"] else {
            return nil
        }
        func string(_ name: String) -> String? {
            if case .string(let value)? = members[name] { value } else { nil }
        }
        return WatchLink(id: id, etag: string("etag"), lastModified: string("lastModified"), sha256: string("sha256"))
    }
}
