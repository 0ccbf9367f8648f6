import Synchronization
import Testing
import Transfer

/// A first connection that asks for the first part only (`TransferRequest.firstPartLength`),
/// against a real origin that honours Range or ignores it.
@Suite struct FirstPartTests {
    private let body = randomBytes(1_000_000)
    private let partLength: Int64 = 300_000

    /// Asks `origin` for the first part of `/f` into a new file (holding `prefix`, resumed with
    /// `validator`, when given): the result, the file's bytes afterwards and every report.
    private func firstPart(from origin: TestOrigin, prefix: [UInt8] = [], validator: String? = nil) async throws
        -> (result: TransferResult, file: [UInt8], reports: [TransferProgress]) {
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }
        let path = directory.file("f")
        if !prefix.isEmpty { write(prefix, to: path) }
        var request = download(origin.url("/f"), to: path, validator: validator)
        request.firstPartLength = partLength
        let reports = Mutex<[TransferProgress]>([])
        let result = await engine.run(request) { report in reports.withLock { $0.append(report) } }
        return (result, contents(path), reports.withLock { $0 })
    }

    @Test func aPartOfALargerFileEndsWithoutFailureOrDigest() async throws {
        let body = body
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }

        let (result, file, reports) = try await firstPart(from: origin)

        #expect(result.partReceived)
        #expect(result.failure == nil && result.sha256 == nil)
        #expect(result.httpStatus == 206)
        #expect((result.bytesOnDisk, result.bytesExpected) == (partLength, Int64(body.count)))
        #expect(result.validator == "\"v1\"")
        #expect(file == Array(body.prefix(Int(partLength))))
        #expect(origin.bodyBytesServed == Int(partLength))
        let request = try #require(origin.requests.first)
        #expect(request.header("Range") == "bytes=0-\(partLength - 1)")
        #expect(request.header("If-Range") == nil)
        // Once the head is in, every report says it is a first part; none says the body is complete.
        #expect(reports.allSatisfy { ($0.bytesExpected == nil || $0.isFirstPart) && !$0.bodyComplete })
    }

    @Test func aResumedPartStartsWhereTheFileEndsWithIfRange() async throws {
        let body = body
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }

        let (result, file, _) = try await firstPart(from: origin, prefix: Array(body.prefix(100_000)), validator: "\"v1\"")

        #expect(result.partReceived)
        #expect(result.bytesOnDisk == 100_000 + partLength)
        #expect(file == Array(body.prefix(100_000 + Int(partLength))))
        let request = try #require(origin.requests.first)
        #expect(request.header("Range") == "bytes=100000-\(100_000 + partLength - 1)")
        #expect(request.header("If-Range") == "\"v1\"")
    }

    @Test func anOriginIgnoringRangeSendsTheWholeFileOnce() async throws {
        let body = body
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0, honourRange: false) }
        defer { origin.stop() }

        let (result, file, reports) = try await firstPart(from: origin)

        #expect(!result.partReceived)
        #expect(result.httpStatus == 200 && result.failure == nil)
        #expect(result.sha256 == sha256Hex(body))
        #expect(file == body)
        #expect(origin.bodyBytesServed == body.count)
        #expect(reports.allSatisfy { !$0.isFirstPart })
    }

    @Test func aFileNoLargerThanThePartCompletesWithItsDigest() async throws {
        let small = Array(body.prefix(Int(partLength)))
        let origin = try TestOrigin { .resource(small, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }

        let (result, file, _) = try await firstPart(from: origin)

        #expect(!result.partReceived)
        #expect(result.httpStatus == 206 && result.failure == nil)
        #expect(result.sha256 == sha256Hex(small))
        #expect(file == small)
    }

    @Test func piecesAfterAFirstPartCoverTheRestWithoutGaps() {
        let pieces = ByteRange.pieces(from: 1 << 20, size: 9 << 20, connections: 4)
        #expect(pieces.map(\.start) == [1 << 20, 3 << 20, 5 << 20, 7 << 20])
        #expect(pieces.last?.end == 9 << 20)
        #expect(zip(pieces, pieces.dropFirst()).allSatisfy { $0.end == $1.start })
    }
}
