/// Which response bodies the server gzips: JSON, plain text and the console's HTML, CSS and
/// JavaScript of at least `minimumBytes`, for a client whose `Accept-Encoding` takes gzip.
/// Streams are never compressed (an event must reach the client as soon as it is written).
enum ResponseCompression {
    /// Below this the saving is a few hundred bytes at best, less than the CPU time is worth;
    /// one job's JSON (under 1 KiB) stays as it is, a page of a few jobs is compressed.
    static let minimumBytes = 4 * 1024

    /// Whether a body with these headers could be sent gzipped (then the response carries
    /// `Vary: Accept-Encoding`, compressed or not, since its form depends on that field).
    static func isCandidate(headers: HTTPHeaders, bodyCount: Int) -> Bool {
        guard bodyCount >= minimumBytes, headers["Content-Encoding"] == nil,
              let type = headers["Content-Type"] else { return false }
        return hasPrefixIgnoringASCIICase(type, "application/json")
            || hasPrefixIgnoringASCIICase(type, "application/problem+json") || hasPrefixIgnoringASCIICase(type, "text/plain")
            || hasPrefixIgnoringASCIICase(type, "text/html") || hasPrefixIgnoringASCIICase(type, "text/css")
            || hasPrefixIgnoringASCIICase(type, "text/javascript")
    }

    /// Whether an `Accept-Encoding` field value takes gzip (RFC 9110 §12.5.3): `gzip` (or its
    /// alias `x-gzip`) with a non-zero weight, or else `*` with a non-zero weight.
    static func acceptsGzip(_ acceptEncoding: String?) -> Bool {
        guard let acceptEncoding else { return false }
        var wildcard: Bool?
        for member in acceptEncoding.split(separator: ",") {
            let parts = member.split(separator: ";")
            guard let coding = parts.first.map({ String($0.trimmingSpaces()) }) else { continue }
            let accepted = parts.dropFirst().allSatisfy { !isZeroWeight($0) }
            if equalsIgnoringASCIICase(coding, "gzip") || equalsIgnoringASCIICase(coding, "x-gzip") {
                return accepted
            }
            if coding == "*" { wildcard = accepted }
        }
        return wildcard ?? false
    }

    /// `q=0`, `q=0.0`, `q=0.000` (any case, spaces allowed around the parameter).
    private static func isZeroWeight(_ parameter: Substring) -> Bool {
        let text = parameter.trimmingSpaces()
        guard hasPrefixIgnoringASCIICase(text, "q=") else { return false }
        let weight = text.dropFirst(2)
        return weight.first == "0" && weight.dropFirst().allSatisfy { $0 == "." || $0 == "0" }
    }
}

private extension Substring {
    func trimmingSpaces() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else { return "" }
        return self[start...end]
    }
}
