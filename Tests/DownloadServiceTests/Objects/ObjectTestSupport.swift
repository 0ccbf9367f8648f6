import Crypto
import DownloadCore
@testable import DownloadService
import Testing
import TestSupport
import Transfer

/// The unit tests of downloads into object storage (`s3://` destinations), each suite in a file of
/// its own: `swift test --filter Objects` runs them.
@Suite enum Objects {}

/// What the object tests share: jobs whose destination is in a bucket, bodies, their digests.
enum ObjectTest {
    /// A queued job fetching `http://origin.example/<id>` into `destination` (`s3://bucket/key`);
    /// `adjust` sets any other field of the submission.
    static func job(_ id: String = "obj", destination: String = "s3://media/movies/film.bin",
                    _ adjust: (inout NewDownload) -> Void = { _ in }) throws -> Download {
        let url = "http://origin.example/\(id)"
        var submission = NewDownload(url: url, parsedURL: try HTTPURL.parse(url).get(), destination: try Destination.parse(destination).get())
        adjust(&submission)
        return submission.makeDownload(id: id, now: ServiceFixture.start)
    }

    /// Bytes no two stretches of which are alike (a part hashed from the wrong offset shows).
    static func noise(_ count: Int, seed: UInt64 = 7) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// Lowercase hex SHA-256.
    static func sha256(_ bytes: some Sequence<UInt8>) -> String {
        SHA256.hash(data: Array(bytes)).map { String(format: "%02x", $0) }.joined()
    }

    /// Lowercase hex SHA-512.
    static func sha512(_ bytes: some Sequence<UInt8>) -> String {
        SHA512.hash(data: Array(bytes)).map { String(format: "%02x", $0) }.joined()
    }

    /// The object's digest state after `bytes`, as a part's commit saves it.
    static func digestState(after bytes: [UInt8]) -> String {
        var digest = ResumableDigest(extra: nil)
        bytes.withUnsafeBytes { digest.update($0) }
        return digest.state
    }
}
