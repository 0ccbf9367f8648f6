import Foundation
import Glibc
import Testing
@testable import Transfer

/// A request body read from a file as it is sent — an upload's PUT or POST — against a real
/// loopback origin: what the origin received, and how much was sent.
@Suite struct FileBodyTests {
    let body = randomBytes(300_000)

    func sending(_ method: TransferRequest.Method, _ range: TransferRequest.FileRange, to url: String) -> TransferRequest {
        var request = TransferRequest(url: url, sink: .memory(limit: 1024))
        request.method = method
        request.bodyFile = range
        request.addressPolicy = .allowAll
        return request
    }

    /// `source.bin` holding `body`, and an origin that answers `/old` with a 307 to `/new`, and
    /// `/new` with a 201.
    func sourceAndRedirectingOrigin() throws -> (TemporaryDirectory, TestOrigin) {
        let directory = try TemporaryDirectory()
        write(body, to: directory.file("source.bin"))
        let origin = try TestOrigin { request in
            request.path == "/old" ? .redirect(to: "/new", status: 307) : OriginResponse(status: 201)
        }
        return (directory, origin)
    }

    @Test(arguments: [TransferRequest.Method.post, .put])
    func theFileIsSentWhole(_ method: TransferRequest.Method) async throws {
        let directory = try TemporaryDirectory()
        write(body, to: directory.file("source.bin"))
        let origin = try TestOrigin { _ in OriginResponse(status: 201, body: Array("stored".utf8)) }
        defer { origin.stop() }

        let range = TransferRequest.FileRange(path: directory.file("source.bin"), offset: 0, length: Int64(body.count))
        let result = await makeEngine().run(sending(method, range, to: origin.url("/files/a")))
        #expect(result.failure == nil && result.httpStatus == 201)
        #expect(result.responseBody == Array("stored".utf8))
        #expect(result.bytesSent == Int64(body.count))
        let received = try #require(origin.requests.first)
        #expect(received.method == method.rawValue && received.path == "/files/a")
        #expect(received.header("Content-Length") == "\(body.count)" && received.header("Expect") == nil)
        #expect(received.body == body)
    }

    /// An upload's source is read through the descriptor it was checked with, not by its path.
    @Test func anOpenDescriptorIsReadRatherThanThePath() async throws {
        let directory = try TemporaryDirectory()
        write(body, to: directory.file("pinned.bin"))
        let fd = open(directory.file("pinned.bin"), O_RDONLY)
        #expect(fd >= 0)
        defer { close(fd) }
        #expect(unlink(directory.file("pinned.bin")) == 0)
        let origin = try TestOrigin { _ in OriginResponse(status: 204) }
        defer { origin.stop() }

        let range = TransferRequest.FileRange(path: "pinned.bin", offset: 0, length: Int64(body.count), descriptor: fd)
        let result = await makeEngine().run(sending(.put, range, to: origin.url("/up")))
        #expect(result.failure == nil && result.httpStatus == 204)
        #expect(origin.requests.first?.body == body && result.bytesSent == Int64(body.count))
        // The caller's descriptor stays open and where it was.
        #expect(lseek(fd, 0, SEEK_CUR) == 0)
    }

    /// A 307 sends the body again to the new place, read again from its start.
    @Test func aBodyIsSentAgainAfterA307() async throws {
        let (directory, origin) = try sourceAndRedirectingOrigin()
        defer { origin.stop() }

        let range = TransferRequest.FileRange(path: directory.file("source.bin"), offset: 0, length: Int64(body.count))
        let result = await makeEngine().run(sending(.put, range, to: origin.url("/old")))
        #expect(result.failure == nil && result.httpStatus == 201)
        #expect(origin.requests.map(\.path) == ["/old", "/new"])
        #expect(origin.requests.last?.method == "PUT" && origin.requests.last?.body == body)
        #expect(result.bytesSent == Int64(body.count))
    }

    /// A hashed range's digest is of the range itself, though curl read it twice (307).
    @Test func aHashedRangesDigestIsOfWhatWentOnce() async throws {
        let (directory, origin) = try sourceAndRedirectingOrigin()
        defer { origin.stop() }

        let part = Array(body[1_000..<250_000])
        let range = TransferRequest.FileRange(path: directory.file("source.bin"), offset: 1_000, length: Int64(part.count), hashed: true)
        let result = await makeEngine().run(sending(.put, range, to: origin.url("/old")))
        #expect(result.failure == nil && result.httpStatus == 201)
        #expect(origin.requests.last?.body == part)
        #expect(result.bodySHA256 == sha256Hex(part))
        // Without asking, no digest.
        let plain = await makeEngine().run(sending(.put, TransferRequest.FileRange(path: directory.file("source.bin"), offset: 0, length: 10),
                                                   to: origin.url("/new")))
        #expect(plain.failure == nil && plain.bodySHA256 == nil)
    }

    /// Rewound, the reader hashes only bytes it had not read; it never skips bytes unhashed.
    @Test func aHashedReaderRewindsButDoesNotSkip() throws {
        let directory = try TemporaryDirectory()
        write(body, to: directory.file("source.bin"))
        let reader = try FileBodyReader(TransferRequest.FileRange(path: directory.file("source.bin"), offset: 0,
                                                                  length: Int64(body.count), hashed: true))
        var buffer = [UInt8](repeating: 0, count: 70_000)
        func readAll() -> [UInt8] {
            var sent: [UInt8] = []
            while let count = buffer.withUnsafeMutableBytes({ reader.read(into: $0) }), count > 0 { sent += buffer[..<count] }
            return sent
        }
        #expect(buffer.withUnsafeMutableBytes { reader.read(into: $0) } == 70_000)
        #expect(!reader.seek(to: 140_000) && reader.sha256 == nil)
        #expect(reader.seek(to: 30_000))
        #expect(readAll() == Array(body[30_000...]))
        #expect(reader.sha256 == sha256Hex(body))
        #expect(reader.seek(to: 0) && readAll() == body && reader.sha256 == sha256Hex(body))
    }

    @Test func aFileShorterThanTheRangeAbortsTheRequest() async throws {
        let directory = try TemporaryDirectory()
        write(body, to: directory.file("source.bin"))
        let origin = try TestOrigin { _ in OriginResponse(status: 201) }
        defer { origin.stop() }

        // The file is shorter than the range announced: the request is aborted rather than sent short.
        let short = sending(.put, TransferRequest.FileRange(path: directory.file("source.bin"), offset: 0, length: Int64(body.count + 10)),
                            to: origin.url("/b"))
        let result = await makeEngine().run(short)
        #expect(result.failure != nil && result.bytesSent < Int64(body.count + 10))
    }
}
