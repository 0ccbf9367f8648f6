import FuzzSupport
import HTTPServer

/// Feeds one input to `RequestParser` the way a connection does and checks what a client could
/// tell apart: the requests and the refusal must not depend on how the bytes were split
/// across reads; a refusal is a 4xx (the API allows no 5xx but 503); no request exceeds the
/// limits; and the bytes the parser holds stay within the limits plus one read.
enum Oracle: FuzzOracle {
    /// Small limits, so that inputs of a few hundred bytes reach every one of them.
    static let configuration: HTTPServerConfiguration = {
        var configuration = HTTPServerConfiguration()
        configuration.maxRequestLineBytes = 64
        configuration.maxHeaderBytes = 256
        configuration.maxHeaderCount = 8
        configuration.maxBodyBytes = 128
        return configuration
    }()

    /// The most a parser may hold after asking for more: a request line and a header section
    /// at their limits (each with its line ending), a body at its limit, and the last read.
    static func retentionBound(readSize: Int) -> Int {
        configuration.maxRequestLineBytes + configuration.maxHeaderBytes + configuration.maxBodyBytes + 8 + readSize
    }

    static func check(_ input: [UInt8]) throws {
        let whole = try parse(input, readSizes: [max(input.count, 1)])
        let bytewise = try parse(input, readSizes: [1])
        // Sizes taken from the input itself, so the fuzzer steers them and every run is the same.
        let irregular = try parse(input, readSizes: input.prefix(16).map { 1 + Int($0 % 97) } + [1])
        guard whole == bytewise, whole == irregular else {
            throw OracleFailure(description: "outcome depends on read sizes:\n whole     \(whole)\n bytewise  \(bytewise)\n irregular \(irregular)")
        }
    }

    /// Runs the parser over `input`, read in pieces of `readSizes` (repeated as needed).
    private static func parse(_ input: [UInt8], readSizes: [Int]) throws -> Outcome {
        var parser = RequestParser(configuration: configuration, remoteAddress: "192.0.2.1:1")
        var outcome = Outcome()
        var offset = 0
        var piece = 0
        while offset < input.count {
            let size = min(readSizes[piece % readSizes.count], input.count - offset)
            piece += 1
            input[offset..<offset + size].withUnsafeBytes { parser.append($0) }
            offset += size
            while true {
                switch parser.next() {
                case .needMore:
                    guard parser.bufferedByteCount <= retentionBound(readSize: size) else {
                        throw OracleFailure(description: "parser holds \(parser.bufferedByteCount) bytes after a read of \(size)")
                    }
                case .sendContinue:
                    continue
                case .request(let request, let keepAlive):
                    try outcome.requests.append(ParsedRequest(request, keepAlive: keepAlive))
                    continue
                case .reject(let rejection):
                    guard (400..<500).contains(rejection.status) else {
                        throw OracleFailure(description: "refused with \(rejection.status): \(rejection.detail)")
                    }
                    outcome.rejection = rejection.status
                    return outcome
                }
                break
            }
        }
        return outcome
    }
}

/// Everything a client could observe of a parse.
private struct Outcome: Equatable {
    var requests: [ParsedRequest] = []
    var rejection: Int?
}

private struct ParsedRequest: Equatable {
    var method: String
    var target: String
    var version: String
    var headers: [String]
    var body: [UInt8]
    var keepAlive: Bool

    init(_ request: HTTPRequest, keepAlive: Bool) throws {
        guard request.headers.count <= Oracle.configuration.maxHeaderCount,
              request.body.count <= Oracle.configuration.maxBodyBytes else {
            throw OracleFailure(description: "a request beyond the limits: \(request.headers.count) fields, \(request.body.count) body bytes")
        }
        method = request.method
        target = request.target
        version = request.version
        headers = request.headers.map { "\($0.name): \($0.value)" }
        body = request.body
        self.keepAlive = keepAlive
    }
}
