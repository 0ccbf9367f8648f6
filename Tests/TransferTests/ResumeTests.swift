import Testing
import Transfer

@Suite struct ResumeTests {
    private let body = randomBytes(1_000_000)
    private let prefixLength = 300_000

    @Test func partialContentAppendsAndTheDigestCoversTheWholeFile() async throws {
        let body = body
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }
        let run = try await downloadOverPartialFile(origin.url("/f"), holding: Array(body.prefix(prefixLength)), validator: "\"v1\"")
        let (path, result) = (run.path, run.result)

        #expect(result.failure == nil)
        #expect(result.httpStatus == 206)
        #expect(contents(path) == body)
        #expect(result.sha256 == sha256Hex(body))
        #expect(result.bytesOnDisk == Int64(body.count))
        #expect(result.bytesThisAttempt == Int64(body.count - prefixLength))
        #expect(result.bytesExpected == Int64(body.count))
        #expect(origin.bodyBytesServed == body.count - prefixLength)
        let request = try #require(origin.requests.first)
        #expect(request.header("Range") == "bytes=\(prefixLength)-")
        #expect(request.header("If-Range") == "\"v1\"")
    }

    @Test func fullContentOnResumeStartsOver() async throws {
        let body = body
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0, honourRange: false) }
        defer { origin.stop() }
        let run = try await downloadOverPartialFile(origin.url("/f"), holding: randomBytes(prefixLength), validator: "\"v1\"")
        let (path, result) = (run.path, run.result)

        #expect(result.failure == nil)
        #expect(result.httpStatus == 200)
        #expect(contents(path) == body)
        #expect(result.sha256 == sha256Hex(body))
    }

    @Test func aChangedValidatorGetsTheNewRepresentation() async throws {
        let body = body
        let origin = try TestOrigin { .resource(body, etag: "\"v2\"", for: $0) }
        defer { origin.stop() }
        let run = try await downloadOverPartialFile(origin.url("/f"), holding: randomBytes(prefixLength), validator: "\"v1\"")
        let (path, result) = (run.path, run.result)

        #expect(result.httpStatus == 200)
        #expect(result.validator == "\"v2\"")
        #expect(contents(path) == body)
        #expect(result.sha256 == sha256Hex(body))
    }

    @Test func withoutAValidatorAPartialFileIsReplaced() async throws {
        let body = body
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }
        let run = try await downloadOverPartialFile(origin.url("/f"), holding: randomBytes(2_000_000))
        let (path, result) = (run.path, run.result)

        #expect(result.httpStatus == 200)
        #expect(origin.requests.first?.header("Range") == nil)
        #expect(contents(path) == body)
    }

    @Test func aWrongContentRangeFailsAndEmptiesTheFile() async throws {
        let body = body
        let origin = try TestOrigin { _ in
            OriginResponse(status: 206, headers: [("Content-Range", "bytes 0-999/\(body.count)")],
                           body: Array(body.prefix(1000)))
        }
        defer { origin.stop() }
        let run = try await downloadOverPartialFile(origin.url("/f"), holding: Array(body.prefix(prefixLength)), validator: "\"v1\"")
        let (path, result) = (run.path, run.result)

        guard case .rangeMismatch? = result.failure else {
            Issue.record("expected rangeMismatch, got \(String(describing: result.failure))")
            return
        }
        #expect(result.bytesOnDisk == 0)
        #expect(contents(path).isEmpty)
        #expect(result.sha256 == nil)
    }

    @Test func rangeNotSatisfiableOnACompleteFileMeansDone() async throws {
        let body = body
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }
        let run = try await downloadOverPartialFile(origin.url("/f"), holding: body, validator: "\"v1\"")
        let (path, result) = (run.path, run.result)

        #expect(result.failure == nil)
        #expect(result.httpStatus == 416)
        #expect(result.bytesOnDisk == Int64(body.count))
        #expect(result.bytesExpected == Int64(body.count))
        #expect(result.sha256 == sha256Hex(body))
        #expect(contents(path) == body)
    }

    @Test func aShortPartialResponseLeavesTheRestMissing() async throws {
        let body = body
        let prefixLength = prefixLength
        let origin = try TestOrigin { _ in
            OriginResponse(status: 206, headers: [("Content-Range", "bytes \(prefixLength)-\(prefixLength + 999)/\(body.count)")],
                           body: Array(body[prefixLength..<(prefixLength + 1000)]))
        }
        defer { origin.stop() }
        let run = try await downloadOverPartialFile(origin.url("/f"), holding: Array(body.prefix(prefixLength)), validator: "\"v1\"")
        let (path, result) = (run.path, run.result)

        guard case .network? = result.failure else {
            Issue.record("expected a network failure, got \(String(describing: result.failure))")
            return
        }
        #expect(result.bytesOnDisk == Int64(prefixLength + 1000))
        #expect(contents(path) == Array(body.prefix(prefixLength + 1000)))
    }
}
