import Crypto
import Foundation
import HTTPServer

/// `GET /ui/` and its assets: the operator console's static files, built into the binary
/// (ConsoleFiles.generated.swift, from Resources/console). They need no token: they hold no
/// data, and the page asks for a token before it reads any.
struct ConsoleAPI: Sendable {
    struct File: Sendable {
        var body: [UInt8]
        var contentType: String
        /// Strong: a digest of the bytes, so it changes exactly when a new build changes the file.
        var etag: String
    }

    /// Made at the first request for the console rather than at start, where most fetchd never
    /// serve it (a static's first use is thread-safe).
    private static let files: [String: File] = {
        var byName: [String: File] = [:]
        for file in ConsoleFiles.all {
            let body = Array(file.text.utf8)
            byName[file.name] = File(body: body, contentType: file.contentType,
                                     etag: "\"" + SHA256.hash(data: body).prefix(16).hex + "\"")
        }
        return byName
    }()

    /// The file at `/ui/<name>` (`index.html` for `/ui/`), or 304 when `If-None-Match` names its ETag.
    func serve(_ name: String, _ request: HTTPRequest) throws(APIProblem) -> HTTPResponse {
        guard let file = Self.files[name.isEmpty ? "index.html" : name] else { throw .notFound("no console file with this name") }
        var headers = HTTPHeaders()
        headers.set("ETag", file.etag)
        // Revalidated on every load, so a new build's console is never mixed with an old cached one.
        headers.set("Cache-Control", "no-cache")
        headers.set("Content-Security-Policy", "default-src 'self'")
        headers.set("X-Content-Type-Options", "nosniff")
        headers.set("X-Frame-Options", "DENY")
        headers.set("Referrer-Policy", "no-referrer")
        if let condition = request.headers["If-None-Match"], Self.matches(condition, file.etag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers.set("Content-Type", file.contentType)
        return HTTPResponse(status: 200, headers: headers, body: .bytes(file.body))
    }

    /// `If-None-Match` compares weakly (RFC 9110 §13.1.2): `*`, or any listed tag with or without `W/`.
    static func matches(_ condition: String, _ etag: String) -> Bool {
        condition.split(separator: ",").contains { member in
            let tag = member.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }

    /// `/ui` without its slash would resolve the page's relative asset paths against `/`.
    static func redirectToSlash() -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.set("Location", "/ui/")
        return HTTPResponse(status: 308, headers: headers)
    }
}
