import CCurl
import DownloadCore
import Glibc

/// The head of one HTTP response, collected from curl's header callback line by line.
/// Every response of an attempt (1xx, each redirect hop, the final one) starts a fresh value.
struct ResponseHeaders {
    private(set) var status: Int
    private(set) var contentLength: Int64?
    private(set) var contentRange: ContentRange?
    private(set) var contentRangeText: String?
    private(set) var etag: String?
    private(set) var lastModified: String?
    private(set) var retryAfterText: String?
    private(set) var location: String?
    private(set) var contentDisposition: String?
    /// Every field, names in lower case, when `add(line:keeping:)` was asked to keep them.
    private(set) var fields: [(name: String, value: String)] = []

    /// "HTTP/1.1 206 Partial Content" or "HTTP/2 200".
    init?(statusLine: String) {
        self.init(statusLine: statusLine.utf8)
    }

    /// A status line as bytes (curl's header callback hands one over for every response).
    init?(statusLine line: some Collection<UInt8>) {
        let space = UInt8(ascii: " ")
        guard line.starts(with: "HTTP/".utf8), let versionEnd = line.firstIndex(of: space) else { return nil }
        let code = line[versionEnd...].drop { $0 == space }.prefix { $0 != space }
        guard code.count == 3, code.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        status = code.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// The fields a head reads, by their names in lower case.
    private enum Field: String, CaseIterable {
        case contentLength = "content-length", contentRange = "content-range", etag, lastModified = "last-modified"
        case retryAfter = "retry-after", location, contentDisposition = "content-disposition"

        /// Their names as bytes, to recognise a field before it is made into strings.
        static let names = allCases.map { Array($0.rawValue.utf8) }

        /// Whether `name`, as sent (in any case), is one of them.
        static func isRead(_ name: UnsafeRawBufferPointer.SubSequence) -> Bool {
            names.contains { $0.elementsEqual(name.lazy.map(\.asciiLowercased)) }
        }
    }

    /// One "Name: value" line as curl hands it over, without its line ending: as `add(line:)`, but
    /// a field this head does not read is not made into strings first (most of a response's are
    /// not, and each was two or three allocations), unless every field is kept.
    mutating func add(line: UnsafeRawBufferPointer, keeping: Bool = false) {
        if !keeping, let colon = line.firstIndex(of: UInt8(ascii: ":")), !Field.isRead(line[..<colon]) { return }
        add(line: String(decoding: line, as: UTF8.self), keeping: keeping)
    }

    /// One "Name: value" line, without its line ending; `keeping`: also into `fields`.
    mutating func add(line: String, keeping: Bool = false) {
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingHTTPWhitespace()
        if keeping { fields.append((name, value)) }
        switch Field(rawValue: name) {
        case .contentLength: contentLength = Int64(value).flatMap { $0 >= 0 ? $0 : nil }
        case .contentRange:
            contentRangeText = value
            contentRange = ContentRange(value)
        case .etag: etag = value
        case .lastModified: lastModified = value
        case .retryAfter: retryAfterText = value
        case .location: location = value
        case .contentDisposition: contentDisposition = value
        case nil: break
        }
    }

    /// What to send as If-Range next time: the ETag, else Last-Modified.
    var validator: String? { etag ?? lastModified }

    /// Seconds to wait before retrying, from Retry-After as delta-seconds or an HTTP-date;
    /// a date in the past means 0.
    func retryAfter(now: time_t = time(nil)) -> Double? {
        guard let text = retryAfterText, !text.isEmpty else { return nil }
        if text.allSatisfy({ $0.isASCII && $0.isNumber }) {
            return Double(text)
        }
        // curl_getdate understands the three date formats HTTP allows (RFC 9110 §5.6.7).
        let date = curl_getdate(text, nil)
        guard date != -1 else { return nil }
        return Double(max(0, date - now))
    }
}

/// A Content-Range header value (RFC 9110 §14.4).
enum ContentRange: Equatable {
    /// "bytes first-last/total", total nil for "*".
    case bytes(first: Int64, last: Int64, total: Int64?)
    /// "bytes */total", sent with 416.
    case unsatisfied(total: Int64)

    init?(_ text: String) {
        guard text.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = text.dropFirst("bytes ".count).trimmingHTTPWhitespace()
        let parts = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let total = parts[1] == "*" ? nil : Self.number(parts[1])
        if parts[0] == "*" {
            guard let total else { return nil }
            self = .unsatisfied(total: total)
            return
        }
        let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Self.number(bounds[0]), let last = Self.number(bounds[1]),
              first <= last
        else { return nil }
        if parts[1] != "*" {
            guard let total, last < total else { return nil }
        }
        self = .bytes(first: first, last: last, total: total)
    }

    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(text)
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (the only whitespace HTTP allows around values).
    func trimmingHTTPWhitespace() -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isBlank($0) }),
              let end = lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(self[start...end])
    }
}
