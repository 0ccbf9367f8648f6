extension UploadPlan {
    /// The plan as the store keeps it: one JSON object, the source pinned by size and time.
    public var text: String {
        var members: [String: JSONValue] = [
            "source": .string(source.path), "method": .string(method.rawValue), "protocol": .string(uploadProtocol.rawValue),
            "contentType": .string(contentType), "deleteSource": .bool(deleteSource),
            "size": .integer(pin.size), "modifiedAt": .integer(pin.modifiedAt),
        ]
        if let replyDestination { members["replyDestination"] = .string(replyDestination.path) }
        if let reply { members["reply"] = reply.json }
        return JSONValue.object(members).jsonText
    }

    /// What `text` wrote, or nil for anything else (a source that is no file under the root, a
    /// path that no longer passes the rules).
    public static func parse(_ text: String) -> UploadPlan? {
        // Text that is not JSON is no plan: nil, which the column reports as unreadable.
        guard case .object(let members)? = try? JSONParser.parse(Array(text.utf8)),
              case .string(let sourcePath)? = members["source"], case .success(let source) = Destination.parse(sourcePath),
              !source.isDirectory, !source.isObject,
              case .string(let methodName)? = members["method"], let method = UploadMethod(rawValue: methodName),
              case .string(let protocolName)? = members["protocol"], let uploadProtocol = UploadProtocol(rawValue: protocolName),
              case .string(let contentType)? = members["contentType"], case .bool(let deleteSource)? = members["deleteSource"],
              case .integer(let size)? = members["size"], case .integer(let modifiedAt)? = members["modifiedAt"]
        else { return nil }
        var replyDestination: Destination?
        if let value = members["replyDestination"] {
            guard case .string(let path) = value, case .success(let destination) = Destination.parse(path) else { return nil }
            replyDestination = destination
        }
        var reply: UploadReply?
        if let value = members["reply"] {
            guard let parsed = UploadReply(json: value) else { return nil }
            reply = parsed
        }
        return UploadPlan(source: source, method: method, uploadProtocol: uploadProtocol, contentType: contentType,
                          deleteSource: deleteSource, replyDestination: replyDestination,
                          pin: SourcePin(size: size, modifiedAt: modifiedAt), reply: reply)
    }
}

extension UploadReply {
    /// As the Upload resource shows it: every field, null where there is nothing.
    public var json: JSONValue {
        .object([
            "status": .integer(Int64(status)), "contentType": optional(contentType), "location": optional(location),
            "etag": optional(etag), "body": optional(body),
        ])
    }

    init?(json: JSONValue) {
        guard case .object(let members) = json, case .integer(let status)? = members["status"], (100...599).contains(status) else {
            return nil
        }
        var texts: [String: String] = [:]
        for name in ["contentType", "location", "etag", "body"] {
            switch members[name] {
            case nil, .null?: continue
            case .string(let text)?: texts[name] = text
            default: return nil
            }
        }
        self.init(status: Int(status), contentType: texts["contentType"], location: texts["location"], etag: texts["etag"],
                  body: texts["body"])
    }

    private func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
}
