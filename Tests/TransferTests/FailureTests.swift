import Foundation
import Testing
import Transfer

@Suite struct FailureTests {
    @Test func anErrorPageIsNotWrittenToTheFile() async throws {
        let page = Array("<h1>not here</h1>".utf8)
        let origin = try TestOrigin { _ in OriginResponse(status: 404, body: page) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.file("out")
        let engine = makeEngine()
        defer { engine.shutdown() }

        let result = await engine.run(download(origin.url("/missing"), to: path))

        #expect(result.failure == nil)
        #expect(result.httpStatus == 404)
        #expect(result.bytesThisAttempt == Int64(page.count))
        #expect(result.bytesOnDisk == 0)
        #expect(result.sha256 == nil)
        #expect(contents(path).isEmpty)
    }

    @Test func anErrorPageLeavesAPartialFileAlone() async throws {
        let origin = try TestOrigin { _ in OriginResponse(status: 503, headers: [("Retry-After", "7")], body: Array("busy".utf8)) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.file("out")
        let prefix = randomBytes(5000)
        write(prefix, to: path)
        let engine = makeEngine()
        defer { engine.shutdown() }

        let result = await engine.run(download(origin.url("/busy"), to: path, validator: "\"v1\""))

        #expect(result.failure == nil)
        #expect(result.httpStatus == 503)
        #expect(result.retryAfter == 7)
        #expect(result.bytesOnDisk == 5000)
        #expect(contents(path) == prefix)
    }

    @Test func anEndlessErrorPageIsCutShort() async throws {
        let origin = try TestOrigin { _ in OriginResponse(status: 500, body: randomBytes(8 << 20), framing: .closeDelimited) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let result = await engine.run(download(origin.url("/huge-error"), to: directory.file("out")))

        #expect(result.failure == nil)
        #expect(result.httpStatus == 500)
        #expect(result.bytesThisAttempt < 8 << 20)
    }

    @Test func maxBytesStopsABodyWithoutContentLength() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: randomBytes(2_000_000), framing: .closeDelimited) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = download(origin.url("/big"), to: directory.file("out"))
        request.maxBytes = 500_000
        let result = await engine.run(request)

        #expect(result.failure == .tooLarge)
        #expect(result.bytesOnDisk <= 500_000)
    }

    @Test func maxBytesRefusesAnAnnouncedLength() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: randomBytes(2_000_000)) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = download(origin.url("/big"), to: directory.file("out"))
        request.maxBytes = 500_000
        let result = await engine.run(request)

        #expect(result.failure == .tooLarge)
        #expect(result.bytesOnDisk == 0)
    }

    // The stalled origin holds its connection open until the client leaves and the request has
    // no total timeout, so only the stall rule can end these transfers: that they end at all is
    // the proof, and the time limit only turns a broken rule into a failure instead of a hang.
    // How soon after the stall they end depends on the machine's load, so it is not asserted;
    // that they did not give up before the stall timeout is.
    @Test(.timeLimit(.minutes(1))) func aStallTimesOut() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: randomBytes(100_000), behaviour: .stallAfter(10_000)) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = download(origin.url("/stall"), to: directory.file("out"))
        request.stallTimeout = 1
        let (result, seconds) = await measure { await engine.run(request) }

        expectStallTimeout(result.failure)
        #expect(result.bytesOnDisk == 10_000)
        #expect(seconds >= 1)
    }

    @Test(.timeLimit(.minutes(1))) func aSilentOriginTimesOut() async throws {
        let origin = try TestOrigin { _ in OriginResponse(behaviour: .silence) }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = TransferRequest(url: origin.url("/slow"), sink: .memory(limit: 100))
        request.addressPolicy = .allowAll
        request.stallTimeout = 1
        let (result, seconds) = await measure { await engine.run(request) }

        expectStallTimeout(result.failure)
        #expect(seconds >= 1)
    }

    /// A timeout for want of data: fetchd's stall check ("no data received") or curl's
    /// low-speed limit ("Operation too slow"), whichever noticed first; not a connect or total timeout.
    private func expectStallTimeout(_ failure: TransferFailure?, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .timeout(let message)? = failure else {
            Issue.record("expected a timeout, got \(String(describing: failure))", sourceLocation: sourceLocation)
            return
        }
        #expect(message.contains("no data received") || message.contains("Operation too slow"),
                "not a stall: \(message)", sourceLocation: sourceLocation)
    }

    @Test func aResetIsANetworkFailure() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: randomBytes(100_000), behaviour: .resetAfter(20_000)) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let result = await engine.run(download(origin.url("/reset"), to: directory.file("out")))

        guard case .network? = result.failure else {
            Issue.record("expected a network failure, got \(String(describing: result.failure))")
            return
        }
        #expect(result.sha256 == nil)
        #expect(result.bytesOnDisk <= 20_000)
    }

    @Test func aClosedPortIsUnreachable() async throws {
        let origin = try TestOrigin { _ in OriginResponse() }
        origin.stop()
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = TransferRequest(url: origin.url("/"), sink: .memory(limit: 10))
        request.addressPolicy = .allowAll
        let result = await engine.run(request)

        guard case .unreachable? = result.failure else {
            Issue.record("expected the origin to be unreachable, got \(String(describing: result.failure))")
            return
        }
        #expect(result.httpStatus == nil)
    }

    @Test func aRedirectLoopHitsTheLimit() async throws {
        let origin = try TestOrigin { _ in .redirect(to: "/loop") }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = download(origin.url("/loop"), to: directory.file("out"))
        request.maxRedirects = 3
        let result = await engine.run(request)

        #expect(result.failure == .tooManyRedirects)
        #expect(origin.requests.count == 4)
        #expect(contents(directory.file("out")).isEmpty)
    }

    @Test func redirectsAreNotFollowedWhenTurnedOff() async throws {
        let origin = try TestOrigin { _ in .redirect(to: "/elsewhere") }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = TransferRequest(url: origin.url("/"), sink: .memory(limit: 100))
        request.addressPolicy = .allowAll
        request.followRedirects = false
        let result = await engine.run(request)

        #expect(result.failure == nil)
        #expect(result.httpStatus == 302)
        #expect(result.responseBody == Array("moved".utf8))
    }

    @Test func aRedirectToAnotherSchemeIsRefused() async throws {
        let origin = try TestOrigin { _ in .redirect(to: "ftp://127.0.0.1/file") }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let result = await engine.run(download(origin.url("/"), to: directory.file("out")))

        guard case .unsupportedScheme? = result.failure else {
            Issue.record("expected unsupportedScheme, got \(String(describing: result.failure))")
            return
        }
    }

    @Test(arguments: ["scp://127.0.0.1/file", "file:///etc/passwd", "gopher://127.0.0.1/"])
    func anotherSchemeIsRefusedAtTheStart(_ url: String) async throws {
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let result = await engine.run(download(url, to: directory.file("out")))

        guard case .unsupportedScheme? = result.failure else {
            Issue.record("expected unsupportedScheme, got \(String(describing: result.failure))")
            return
        }
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/full"), "needs /dev/full"))
    func aFullDiskIsDiskFull() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: randomBytes(100_000)) }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        // Every write to /dev/full fails with ENOSPC.
        let result = await engine.run(download(origin.url("/"), to: "/dev/full"))

        #expect(result.failure == .diskFull)
        #expect(result.httpStatus == 200)
    }

    @Test func anUnwritableFileIsAFileError() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: [1, 2, 3]) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let result = await engine.run(download(origin.url("/"), to: directory.file("no/such/dir/out")))

        guard case .fileError? = result.failure else {
            Issue.record("expected fileError, got \(String(describing: result.failure))")
            return
        }
        #expect(origin.connectionsAccepted == 0)
    }
}
