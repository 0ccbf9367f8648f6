import Crypto
import DownloadCore

/// A digest a download can be checked against: the algorithms a job's `checksum` may name, one
/// list for the domain and the engine. SHA-256 is always computed while writing; the service
/// names one of the others in `TransferRequest.extraDigest` when the job's `checksum` (or
/// `checksumURL`'s digest) uses it, and compares `TransferResult.extraDigest` with it.
public typealias DigestAlgorithm = Checksum.Algorithm

/// The hash state of the digest computed beside SHA-256.
enum ExtraHasher {
    case sha512(SHA512)
    case sha1(Insecure.SHA1)
    case md5(Insecure.MD5)

    /// Nil for none, and for SHA-256 (computed anyway).
    init?(_ algorithm: DigestAlgorithm?) {
        switch algorithm {
        case .sha512: self = .sha512(SHA512())
        case .sha1: self = .sha1(Insecure.SHA1())
        case .md5: self = .md5(Insecure.MD5())
        case .sha256, nil: return nil
        }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .sha512(var hasher):
            hasher.update(bufferPointer: bytes)
            self = .sha512(hasher)
        case .sha1(var hasher):
            hasher.update(bufferPointer: bytes)
            self = .sha1(hasher)
        case .md5(var hasher):
            hasher.update(bufferPointer: bytes)
            self = .md5(hasher)
        }
    }

    func finalize() -> String {
        switch self {
        case .sha512(let hasher): hasher.finalize().withUnsafeBytes(\.hex)
        case .sha1(let hasher): hasher.finalize().withUnsafeBytes(\.hex)
        case .md5(let hasher): hasher.finalize().withUnsafeBytes(\.hex)
        }
    }
}
