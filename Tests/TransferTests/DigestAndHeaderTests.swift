import Crypto
import Foundation
import Testing
import Transfer

/// The extra digest computed while writing, and the headers a result carries for the service.
@Suite struct DigestAndHeaderTests {
    private let body = randomBytes(1_500_000)

    /// What `extraDigest` should say: nothing without an algorithm, nor for SHA-256 (always given).
    private func expected(_ algorithm: DigestAlgorithm?, _ bytes: [UInt8]) -> String? {
        let digest: [UInt8]
        switch algorithm {
        case .sha512: digest = Array(SHA512.hash(data: bytes))
        case .sha1: digest = Array(Insecure.SHA1.hash(data: bytes))
        case .md5: digest = Array(Insecure.MD5.hash(data: bytes))
        case .sha256, nil: return nil
        }
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    @Test(arguments: [nil] + DigestAlgorithm.allCases.map { Optional($0) })
    func theExtraDigestIsOfTheWholeFile(_ algorithm: DigestAlgorithm?) async throws {
        let body = body
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = download(origin.url("/f"), to: directory.file("f"))
        request.extraDigest = algorithm
        let result = await engine.run(request)

        #expect(result.failure == nil)
        #expect(result.sha256 == sha256Hex(body))
        #expect(result.extraDigest == expected(algorithm, body))
        if let algorithm, let digest = expected(algorithm, body) { #expect(digest.count == algorithm.hexLength) }
    }

    @Test func aResumedFileGetsTheExtraDigestOfItsWholeContent() async throws {
        let body = body
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.file("partial")
        write(Array(body.prefix(1_000_000)), to: path)
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = download(origin.url("/f"), to: path, validator: "\"v1\"")
        request.extraDigest = .md5
        let result = await engine.run(request)

        #expect(result.httpStatus == 206)
        #expect(result.extraDigest == expected(.md5, body))
        #expect(result.sha256 == sha256Hex(body))
    }

    @Test func theFinalResponsesContentDispositionIsPassedOnAsSent() async throws {
        let header = #"attachment; filename="../evil.sh"; filename*=UTF-8''%E2%82%AC.txt"#
        let origin = try TestOrigin { request in
            if request.path == "/start" { return .redirect(to: "/file") }
            return OriginResponse(headers: [("Content-Disposition", header)], body: Array("data".utf8))
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let result = await engine.run(download(origin.url("/start"), to: directory.file("f")))

        #expect(result.contentDisposition == header)
        #expect(result.effectiveURL == origin.url("/file"))
    }
}
