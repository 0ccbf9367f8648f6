import COpenSSL
import DownloadCore
import Foundation

/// SHA-256 of an object (and the digest its `checksum` names, when another) computed part by
/// part, whose state is saved with each uploaded part and restored after a restart, on this node
/// or another: the parts already uploaded are never read again. OpenSSL's contexts are plain
/// structs, so their bytes are the state (the same library version and machine architecture on
/// every node; a state that does not fit makes `init(state:)` fail, and the object start over).
public struct ResumableDigest: @unchecked Sendable {  // @unchecked: C structs of plain integers, copied by value
    private var sha256 = SHA256_CTX()
    private var extra: Extra?

    private enum Extra {
        case sha512(SHA512_CTX)
        case sha1(SHA_CTX)
        case md5(MD5_CTX)
    }

    /// A digest from the first byte; `extra`: the algorithm of the job's checksum besides SHA-256.
    public init(extra algorithm: DigestAlgorithm?) {
        SHA256_Init(&sha256)
        switch algorithm {
        case .sha512?: var context = SHA512_CTX(); SHA512_Init(&context); extra = .sha512(context)
        case .sha1?: var context = SHA_CTX(); SHA1_Init(&context); extra = .sha1(context)
        case .md5?: var context = MD5_CTX(); MD5_Init(&context); extra = .md5(context)
        case .sha256?, nil: extra = nil
        }
    }

    /// The digest as `state` left it, or nil when the text is not a state of this kind.
    public init?(state: String, extra algorithm: DigestAlgorithm?) {
        self.init(extra: algorithm)
        let fields = state.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 3, fields[0] == Self.version,
              let main = Data(base64Encoded: String(fields[1])), Self.restore(&sha256, from: main) else { return nil }
        let extraBytes = Data(base64Encoded: String(fields[2]))
        switch extra {
        case .sha512(var context)?:
            guard let extraBytes, Self.restore(&context, from: extraBytes) else { return nil }
            extra = .sha512(context)
        case .sha1(var context)?:
            guard let extraBytes, Self.restore(&context, from: extraBytes) else { return nil }
            extra = .sha1(context)
        case .md5(var context)?:
            guard let extraBytes, Self.restore(&context, from: extraBytes) else { return nil }
            extra = .md5(context)
        case nil:
            guard fields[2].isEmpty else { return nil }
        }
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        SHA256_Update(&sha256, base, bytes.count)
        switch extra {
        case .sha512(var context)?: SHA512_Update(&context, base, bytes.count); extra = .sha512(context)
        case .sha1(var context)?: SHA1_Update(&context, base, bytes.count); extra = .sha1(context)
        case .md5(var context)?: MD5_Update(&context, base, bytes.count); extra = .md5(context)
        case nil: break
        }
    }

    /// The state to save: `v1:<SHA-256 context>:<other context>`, each in base64.
    public var state: String {
        let other: String
        switch extra {
        case .sha512(let context)?: other = Self.bytes(of: context)
        case .sha1(let context)?: other = Self.bytes(of: context)
        case .md5(let context)?: other = Self.bytes(of: context)
        case nil: other = ""
        }
        return "\(Self.version):\(Self.bytes(of: sha256)):\(other)"
    }

    /// The digests of everything given so far, lowercase hex (the state goes on unchanged).
    public func finalize() -> (sha256: String, extra: String?) {
        var main = sha256
        let sha256 = Self.final(Int(SHA256_DIGEST_LENGTH)) { SHA256_Final($0, &main) }
        switch extra {
        case .sha512(var context)?: return (sha256, Self.final(Int(SHA512_DIGEST_LENGTH)) { SHA512_Final($0, &context) })
        case .sha1(var context)?: return (sha256, Self.final(Int(SHA_DIGEST_LENGTH)) { SHA1_Final($0, &context) })
        case .md5(var context)?: return (sha256, Self.final(Int(MD5_DIGEST_LENGTH)) { MD5_Final($0, &context) })
        case nil: return (sha256, nil)
        }
    }

    private static let version = "v1"

    private static func bytes<Context>(of context: Context) -> String {
        withUnsafeBytes(of: context) { Data($0).base64EncodedString() }
    }

    private static func restore<Context>(_ context: inout Context, from data: Data) -> Bool {
        guard data.count == MemoryLayout<Context>.size else { return false }
        withUnsafeMutableBytes(of: &context) { target in data.withUnsafeBytes { target.copyMemory(from: $0) } }
        return true
    }

    private static func final(_ length: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int32) -> String {
        var digest = [UInt8](repeating: 0, count: length)
        _ = digest.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map(body) }
        return digest.hex
    }
}
