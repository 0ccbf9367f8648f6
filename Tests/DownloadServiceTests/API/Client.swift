import DownloadCore
import HTTPServer
import Testing

/// The API's tests, each suite on one topic: requests go through the service's router in-process,
/// as a client would send them (`swift test --filter API`).
@Suite enum API {}

/// What a client sends and reads: requests built as on the wire (a JSON body is text with its
/// `Content-Type`), answers read as status, headers and parsed JSON.
extension ServiceAPI {
    /// `contentType` is sent with a body only, `nil` not at all.
    func send(_ method: String, _ target: String, body: String? = nil, contentType: String? = "application/json",
              headers: [(String, String)] = []) async -> Reply {
        var fields = HTTPHeaders(headers)
        if body != nil, let contentType { fields.set("Content-Type", contentType) }
        let request = HTTPRequest(method: method, target: target, headers: fields, body: Array((body ?? "").utf8))
        return Reply(await handle(request))
    }

    func get(_ target: String, headers: [(String, String)] = []) async -> Reply {
        await send("GET", target, headers: headers)
    }

    func post(_ target: String, _ body: String? = nil, headers: [(String, String)] = []) async -> Reply {
        await send("POST", target, body: body, headers: headers)
    }

    func patch(_ id: String, _ body: String, headers: [(String, String)] = []) async -> Reply {
        await send("PATCH", "/downloads/\(id)", body: body, contentType: "application/merge-patch+json", headers: headers)
    }

    func delete(_ id: String) async -> Reply {
        await send("DELETE", "/downloads/\(id)")
    }

    /// The job as `GET /downloads/{id}` shows it.
    func download(_ id: String) async throws -> JSONValue {
        let reply = await get("/downloads/\(id)")
        try #require(reply.status == 200)
        return try reply.json()
    }

    /// The job's state, nil if it cannot be read.
    func state(_ id: String) async -> String? {
        try? await download(id)["state"]?.string
    }
}

/// A `POST /downloads` body for the job `name`: `http://origin.example/<name>` (so FakeTransfers
/// knows its attempts by `name`) into `files/<name>`, with `fields` (JSON members) added.
func submission(_ name: String, _ fields: String = "") -> String {
    #"{"url": "http://origin.example/\#(name)", "destination": "files/\#(name)""# + (fields.isEmpty ? "" : ", " + fields) + "}"
}

/// A response as a client reads it.
struct Reply: Sendable {
    let status: Int
    let headers: HTTPHeaders
    let body: HTTPBody

    init(_ response: HTTPResponse) {
        status = response.status
        headers = response.headers
        body = response.body
    }

    /// The whole body as text, nil if it is streamed.
    var text: String? {
        guard case .bytes(let bytes) = body else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The whole body, parsed; fails the test if it is streamed or not JSON.
    func json() throws -> JSONValue {
        guard case .bytes(let bytes) = body else { throw Unexpected.streamingBody }
        return try JSONParser.parse(bytes)
    }

    /// Checks that this is an RFC 9457 problem of `status` (`type`, `title`, `status`, `detail`)
    /// and returns it.
    @discardableResult
    func problem(_ status: Int, sourceLocation: SourceLocation = #_sourceLocation) throws -> Problem {
        #expect(self.status == status, sourceLocation: sourceLocation)
        #expect(headers["Content-Type"] == "application/problem+json", sourceLocation: sourceLocation)
        let json = try json()
        #expect(json["type"]?.string == "about:blank", sourceLocation: sourceLocation)
        #expect(json["title"]?.string?.isEmpty == false, sourceLocation: sourceLocation)
        #expect(json["status"] == .integer(Int64(status)), sourceLocation: sourceLocation)
        #expect(json["detail"]?.string?.isEmpty == false, sourceLocation: sourceLocation)
        return Problem(json: json)
    }

    enum Unexpected: Error {
        case streamingBody
    }
}

/// An RFC 9457 problem's `errors` array.
struct Problem {
    let json: JSONValue

    /// The `field` of each entry of `errors`, in order (none without the array).
    var fields: [String] { errors.map(\.field) }

    var errors: [(field: String, message: String)] {
        (json["errors"]?.array ?? []).map { ($0["field"]?.string ?? "?", $0["message"]?.string ?? "") }
    }
}

extension JSONValue {
    subscript(_ key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    subscript(_ index: Int) -> JSONValue? {
        guard case .array(let items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }

    var string: String? {
        guard case .string(let text) = self else { return nil }
        return text
    }

    var integer: Int64? {
        guard case .integer(let number) = self else { return nil }
        return number
    }

    var array: [JSONValue]? {
        guard case .array(let items) = self else { return nil }
        return items
    }
}
