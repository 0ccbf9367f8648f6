import Crypto
import Foundation
import Testing
import Transfer

/// An object's digests computed part by part, saved after each part and restored elsewhere.
@Suite struct ResumableDigestTests {
    private let body = randomBytes(3_000_017)

    private func hex(_ digest: some Sequence<UInt8>) -> String { digest.map { String(format: "%02x", $0) }.joined() }

    private func expected(_ algorithm: DigestAlgorithm?, _ bytes: [UInt8]) -> String? {
        switch algorithm {
        case .sha512: hex(SHA512.hash(data: bytes))
        case .sha1: hex(Insecure.SHA1.hash(data: bytes))
        case .md5: hex(Insecure.MD5.hash(data: bytes))
        case .sha256, nil: nil
        }
    }

    @Test(arguments: [nil] + DigestAlgorithm.allCases.map { Optional($0) })
    func aDigestRestoredFromItsStateGoesOnAsIfNeverStopped(_ algorithm: DigestAlgorithm?) throws {
        let cut = 1_048_576 + 13
        var first = ResumableDigest(extra: algorithm)
        body[..<cut].withUnsafeBytes { first.update($0) }
        let state = first.state

        var resumed = try #require(ResumableDigest(state: state, extra: algorithm))
        body[cut...].withUnsafeBytes { resumed.update($0) }

        let digests = resumed.finalize()
        #expect(digests.sha256 == sha256Hex(body))
        #expect(digests.extra == expected(algorithm, body))
    }

    @Test func finalizingLeavesTheStateAsItWas() {
        var digest = ResumableDigest(extra: .md5)
        body[..<1000].withUnsafeBytes { digest.update($0) }
        let before = digest.state
        #expect(digest.finalize().sha256 == sha256Hex(Array(body[..<1000])))
        #expect(digest.state == before)
    }

    @Test func aStateOfAnotherKindIsRefused() {
        let sha1State = ResumableDigest(extra: .sha1).state
        #expect(ResumableDigest(state: sha1State, extra: .md5) == nil)
        #expect(ResumableDigest(state: sha1State, extra: nil) == nil)
        #expect(ResumableDigest(state: "v1:AAAA:", extra: nil) == nil)
        #expect(ResumableDigest(state: "not a state", extra: nil) == nil)
        #expect(ResumableDigest(state: "", extra: nil) == nil)
    }
}
