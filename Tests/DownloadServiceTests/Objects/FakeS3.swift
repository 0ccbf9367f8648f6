import Foundation
import Synchronization
@testable import Transfer

/// Stands in for an S3-compatible server behind `ObjectStorageClient`: records each request the
/// client sends and answers it as a small bucket would (a new upload id, an ETag per part, a stored
/// object, an abort, a HEAD by the keys said to exist), unless the test gave another answer for
/// it or holds it to answer later. Answers come back on the thread that sent the request.
final class FakeS3: Sendable {
    static let settings = ObjectStorageSettings(endpoint: "http://s3.test:9000", region: "eu-west-1",
                                                accessKeyID: "AKIDEXAMPLE", secretAccessKey: "test-secret-key")

    /// One S3 operation as the request shows it.
    enum Operation: Equatable, Sendable, CustomStringConvertible {
        case create, part(Int), complete, abort, put, head, other

        var description: String {
            switch self {
            case .create: "create"
            case .part(let number): "part \(number)"
            case .complete: "complete"
            case .abort: "abort"
            case .put: "put"
            case .head: "head"
            case .other: "other"
            }
        }
    }

    /// A request as sent: the engine's request, and what its URL says.
    struct Request: Sendable {
        let request: TransferRequest
        let bucket: String
        /// Percent-decoded.
        let key: String
        let query: [String: String]

        var method: TransferRequest.Method { request.method }

        var operation: Operation {
            switch (method, query["uploads"] != nil, query["partNumber"].flatMap { Int($0) }, query["uploadId"] != nil) {
            case (.post, true, _, _): .create
            case (.put, _, let number?, true): .part(number)
            case (.post, false, _, true): .complete
            case (.delete, _, _, true): .abort
            case (.put, _, nil, false): .put
            case (.head, _, _, _): .head
            default: .other
            }
        }

        /// The first header called `name` (any case).
        func header(_ name: String) -> String? {
            request.headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        /// The request's body as text (CompleteMultipartUpload's XML).
        var bodyText: String { String(decoding: request.body, as: UTF8.self) }
    }

    enum Reply: Sendable {
        case answer(TransferResult)
        /// Kept unanswered until the test calls `release`.
        case hold
    }

    private struct Rule {
        let matches: @Sendable (Request) -> Bool
        let reply: Reply
        let once: Bool
    }

    private struct Held {
        let request: Request
        let answer: @Sendable (TransferResult) -> Void
    }

    private struct State {
        var requests: [Request] = []
        var rules: [Rule] = []
        var held: [Held] = []
        var existing: Set<String> = []
        var uploads = 0
    }

    private let state = Mutex(State())

    init(existing: Set<String> = []) {
        state.withLock { $0.existing = existing }
    }

    /// An object is at `key` from now on.
    func add(_ key: String) {
        state.withLock { _ = $0.existing.insert(key) }
    }

    /// A client whose every request comes here.
    var client: ObjectStorageClient {
        ObjectStorageClient(settings: Self.settings) { request, done in self.receive(request, done) }
    }

    /// Every request sent so far, in order.
    var requests: [Request] { state.withLock { $0.requests } }

    /// The operations of the requests sent so far, in order.
    var operations: [Operation] { requests.map(\.operation) }

    /// Requests held and not yet released.
    var heldCount: Int { state.withLock { $0.held.count } }

    /// The next request (or, with `once` false, every one) of `operation` gets `reply`.
    func reply(to operation: Operation, with reply: Reply, once: Bool = true) {
        state.withLock { $0.rules.append(Rule(matches: { $0.operation == operation }, reply: reply, once: once)) }
    }

    /// The next request of `operation` is answered with `answer`.
    func answer(_ operation: Operation, with answer: TransferResult, once: Bool = true) {
        reply(to: operation, with: .answer(answer), once: once)
    }

    /// Answers the newest held request as the bucket would.
    func releaseLast() {
        let held: Held? = state.withLock { state in state.held.popLast() }
        held.map { $0.answer(bucketAnswer($0.request)) }
    }

    /// Answers the oldest held request with `answer`, or as the bucket would when nil.
    func releaseFirst(with answer: TransferResult? = nil) {
        let held: Held? = state.withLock { state in
            state.held.isEmpty ? nil : state.held.removeFirst()
        }
        guard let held else { return }
        held.answer(answer ?? bucketAnswer(held.request))
    }

    private func receive(_ request: TransferRequest, _ done: @escaping @Sendable (TransferResult) -> Void) {
        let parsed = Self.parse(request)
        let reply: Reply = state.withLock { state in
            state.requests.append(parsed)
            if let index = state.rules.firstIndex(where: { $0.matches(parsed) }) {
                let rule = state.rules[index]
                if rule.once { state.rules.remove(at: index) }
                if case .hold = rule.reply { state.held.append(Held(request: parsed, answer: done)) }
                return rule.reply
            }
            return .answer(bucketAnswer(parsed, state: &state))
        }
        if case .answer(let result) = reply { done(result) }
    }

    private func bucketAnswer(_ request: Request) -> TransferResult {
        state.withLock { bucketAnswer(request, state: &$0) }
    }

    /// What a bucket holding `state.existing` answers.
    private func bucketAnswer(_ request: Request, state: inout State) -> TransferResult {
        switch request.operation {
        case .create:
            state.uploads += 1
            return Self.answer(200, """
                <?xml version="1.0" encoding="UTF-8"?>
                <InitiateMultipartUploadResult><Bucket>\(request.bucket)</Bucket><Key>\(request.key)</Key>\
                <UploadId>upload-\(state.uploads)</UploadId></InitiateMultipartUploadResult>
                """)
        case .part(let number):
            return Self.answer(200, headers: [("ETag", "\"etag-\(number)\"")])
        case .complete:
            state.existing.insert(request.key)
            return Self.answer(200, """
                <?xml version="1.0" encoding="UTF-8"?>
                <CompleteMultipartUploadResult><Bucket>\(request.bucket)</Bucket><Key>\(request.key)</Key>\
                <ETag>&quot;multipart-etag-3&quot;</ETag></CompleteMultipartUploadResult>
                """)
        case .put:
            state.existing.insert(request.key)
            return Self.answer(200, headers: [("ETag", "\"put-etag\"")])
        case .abort:
            return Self.answer(204)
        case .head:
            return Self.answer(state.existing.contains(request.key) ? 200 : 404)
        case .other:
            return Self.answer(400, Self.error("InvalidRequest", "not an operation of this bucket"))
        }
    }

    // MARK: - Canned answers

    /// What the engine reports for an answer with this status, body and header fields.
    static func answer(_ status: Int, _ body: String = "", headers: [(String, String)] = []) -> TransferResult {
        var result = TransferResult(httpStatus: status, responseBody: Array(body.utf8))
        result.responseHeaders = headers.map { (name: $0.0.lowercased(), value: $0.1) }
        return result
    }

    /// An S3 error document.
    static func error(_ code: String, _ message: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <Error><Code>\(code)</Code><Message>\(message)</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>
        """
    }

    /// An answer with S3's error document for `code`.
    static func failure(_ status: Int, _ code: String, _ message: String = "refused by the test") -> TransferResult {
        answer(status, error(code, message))
    }

    /// The endpoint could not be reached: no answer at all.
    static let unreachable = TransferResult(failure: .unreachable("connect to s3.test:9000: connection refused"))

    /// Bucket, key and query of a path-style URL under `settings.endpoint`.
    private static func parse(_ request: TransferRequest) -> Request {
        var rest = Substring(request.url.dropFirst(settings.endpoint.count + 1))
        var query: [String: String] = [:]
        if let mark = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: mark)...].split(separator: "&") {
                let sides = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(sides[0]).removingPercentEncoding ?? String(sides[0])
                let value = sides.count > 1 ? String(sides[1]).removingPercentEncoding ?? String(sides[1]) : ""
                query[name] = value
            }
            rest = rest[..<mark]
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let key = slash == rest.endIndex ? "" : String(rest[rest.index(after: slash)...])
        return Request(request: request, bucket: String(rest[..<slash]), key: key.removingPercentEncoding ?? key, query: query)
    }
}
