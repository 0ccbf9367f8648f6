extension HTTPResponse {
    /// An RFC 9457 `application/problem+json` response:
    /// `{"type":"about:blank","title":…,"status":…,"detail":…}`, plus `"errors":[{"field","message"}]`
    /// when `errors` is not empty.
    public static func problem(
        _ status: Int,
        title: String,
        detail: String,
        errors: [(field: String, message: String)] = [],
        headers: HTTPHeaders = HTTPHeaders()
    ) -> HTTPResponse {
        var json = #"{"type":"about:blank","title":"#
        appendJSONString(title, to: &json)
        json += #","status":"# + String(status) + #","detail":"#
        appendJSONString(detail, to: &json)
        if !errors.isEmpty {
            json += #","errors":["#
            for (index, error) in errors.enumerated() {
                json += index == 0 ? #"{"field":"# : #",{"field":"#
                appendJSONString(error.field, to: &json)
                json += #","message":"#
                appendJSONString(error.message, to: &json)
                json += "}"
            }
            json += "]"
        }
        json += "}"
        var headers = headers
        headers.set("Content-Type", "application/problem+json")
        return HTTPResponse(status: status, headers: headers, body: .bytes(Array(json.utf8)))
    }

    /// The server's own refusals: the title is the status's reason phrase.
    static func problem(_ status: Int, detail: String, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        problem(status, title: reasonPhrase(status), detail: detail, headers: headers)
    }
}

/// Appends `text` as a quoted JSON string (RFC 8259 §7): quote, backslash and control
/// characters escaped, everything else as UTF-8.
func appendJSONString(_ text: String, to json: inout String) {
    json += "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": json += "\\\""
        case "\\": json += "\\\\"
        case "\n": json += "\\n"
        case "\r": json += "\\r"
        case "\t": json += "\\t"
        case "\u{08}": json += "\\b"
        case "\u{0C}": json += "\\f"
        case "\u{00}"..."\u{1F}":
            let hex = String(scalar.value, radix: 16)
            json += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default:
            json.unicodeScalars.append(scalar)
        }
    }
    json += "\""
}
