import Synchronization
@testable import Transfer

enum S3Fixture {
    static let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    static let location = ObjectLocation(bucket: "media", key: "jobs/42/movie (final).mkv")
    static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    static let bodySHA256 = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    static let range = TransferRequest.FileRange(path: "/var/spool/fetchd/42.part", offset: 5 << 20, length: 5 << 20)

    static func settings(_ endpoint: String = "http://127.0.0.1:9000",
                         addressing: ObjectStorageSettings.Addressing = .path) -> ObjectStorageSettings {
        ObjectStorageSettings(endpoint: endpoint, region: "eu-west-1", accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                              secretAccessKey: secret, addressing: addressing)
    }

    static func requests(_ endpoint: String = "http://127.0.0.1:9000",
                         addressing: ObjectStorageSettings.Addressing = .path) -> S3Requests {
        S3Requests(settings: settings(endpoint, addressing: addressing))
    }

    /// What the engine would report for an answer with this status, body and header fields.
    static func answer(_ status: Int, _ body: String = "", headers: [(String, String)] = []) -> TransferResult {
        var result = TransferResult(httpStatus: status, responseBody: Array(body.utf8))
        result.responseHeaders = headers.map { (name: $0.0.lowercased(), value: $0.1) }
        return result
    }

    static func error(_ code: String, _ message: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <Error>
          <Code>\(code)</Code>
          <Message>\(message)</Message>
          <RequestId>4442587FB7D0A2F9</RequestId>
          <HostId>Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtRPfTaOFg==</HostId>
        </Error>
        """
    }
}

extension TransferRequest {
    /// The headers as "name: value" lines, in the order sent.
    var headerLines: [String] { headers.map { "\($0.0): \($0.1)" } }

    var memoryLimit: Int? {
        if case .memory(let limit) = sink { return limit }
        return nil
    }
}

/// Stands in for the engine: records each request and answers it with the next canned result.
final class CannedEngine: Sendable {
    private let state: Mutex<(requests: [TransferRequest], answers: [TransferResult])>

    init(_ answers: TransferResult...) {
        state = Mutex((requests: [], answers: answers))
    }

    var requests: [TransferRequest] { state.withLock { $0.requests } }

    func client(_ settings: ObjectStorageSettings = S3Fixture.settings()) -> ObjectStorageClient {
        ObjectStorageClient(settings: settings) { request, done in
            let answer = self.state.withLock { state in
                state.requests.append(request)
                return state.answers.isEmpty ? TransferResult(failure: .cancelled) : state.answers.removeFirst()
            }
            done(answer)
        }
    }
}

/// The result of a client call, awaited.
func outcome<Value: Sendable>(
    _ call: (@escaping @Sendable (Result<Value, ObjectStorageFailure>) -> Void) -> Void
) async -> Result<Value, ObjectStorageFailure> {
    await withCheckedContinuation { continuation in
        call { continuation.resume(returning: $0) }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
