import Crypto
import DownloadCore

/// An object in a bucket.
public struct ObjectLocation: Sendable, Hashable {
    public var bucket: String
    /// The object's key as stored (not encoded); `/` separates the segments of its path.
    public var key: String

    public init(bucket: String, key: String) {
        self.bucket = bucket
        self.key = key
    }
}

/// One part of a multipart upload as S3 took it (number 1...10000, its size, its ETag exactly as
/// S3 sent it, quotes included): the same record the job keeps of each committed part.
public typealias UploadedPart = ObjectUpload.Part

/// A stored object's identity once written.
public struct StoredObject: Sendable, Equatable {
    /// As S3 sent it, quotes included (`"<md5>-<parts>"` for a multipart upload).
    public var etag: String
    /// `x-amz-version-id`, when the bucket keeps versions.
    public var versionID: String?

    public init(etag: String, versionID: String? = nil) {
        self.etag = etag
        self.versionID = versionID
    }

    /// The ETag S3 gives the object that `parts` complete: the MD5 of their MD5s, then their count
    /// (`"<md5>-<count>"`). Nil when a part's ETag is not its MD5 (a part encrypted with a KMS or
    /// customer key), so that no object can be taken for the parts'.
    public static func etag(completing parts: [UploadedPart]) -> String? {
        var md5s: [UInt8] = []
        for part in parts {
            guard part.etag.count == 34, part.etag.hasPrefix("\""), part.etag.hasSuffix("\""),
                  let md5 = [UInt8](hex: String(part.etag.dropFirst().dropLast()))
            else { return nil }
            md5s += md5
        }
        guard !parts.isEmpty else { return nil }
        return "\"\(Insecure.MD5.hash(data: md5s).hex)-\(parts.count)\""
    }
}
