import DownloadCore
import Foundation
import Transfer

/// The object storage `s3://` destinations go to (FETCHD_S3_*): where it is, how requests to it
/// are signed, and the size of the parts a file goes up in.
public struct ObjectStorageConfiguration: Sendable {
    public var settings: ObjectStorageSettings
    public var partSize: Int64

    /// S3's bounds on a part (all but the last).
    static let partSizes: ClosedRange<Int64> = (5 << 20)...(5 << 30)

    /// Nil without an endpoint. With one, the key pair is required; the secret comes from its
    /// file when one is named. Errors never echo the secret.
    static func read(_ reader: SettingReader) throws(Configuration.Invalid) -> ObjectStorageConfiguration? {
        guard let endpoint = reader.optional("s3-endpoint") else { return nil }
        guard case .success(let url) = HTTPURL.parse(endpoint), url.scheme == "http" || url.scheme == "https",
              !endpoint.contains("?"), !endpoint.contains("#") else {
            throw reader.invalid("s3-endpoint", endpoint, "expected an http or https URL like http://127.0.0.1:9000")
        }
        let accessKeyID = try reader.text("s3-access-key-id")
        let secret = try secretAccessKey(reader)
        let addressingText = try reader.text("s3-addressing")
        guard let addressing = ObjectStorageSettings.Addressing(rawValue: addressingText) else {
            throw reader.invalid("s3-addressing", addressingText, "expected path or virtual")
        }
        let partSizeText = try reader.text("s3-part-size")
        let partSize = try reader.size("s3-part-size", partSizeText)
        guard partSizes.contains(partSize) else { throw reader.invalid("s3-part-size", partSizeText, "expected 5MiB to 5GiB") }
        let trimmed = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        let settings = ObjectStorageSettings(endpoint: trimmed, region: try reader.text("s3-region"), accessKeyID: accessKeyID,
                                             secretAccessKey: secret, addressing: addressing)
        if let problem = settings.problem { throw Configuration.Invalid(description: "invalid FETCHD_S3_* settings: \(problem)") }
        return ObjectStorageConfiguration(settings: settings, partSize: partSize)
    }

    private static func secretAccessKey(_ reader: SettingReader) throws(Configuration.Invalid) -> String {
        guard let path = reader.optional("s3-secret-access-key-file") else {
            guard reader.optional("s3-secret-access-key") != nil else {
                throw Configuration.Invalid(description: "FETCHD_S3_ENDPOINT needs FETCHD_S3_SECRET_ACCESS_KEY_FILE (or FETCHD_S3_SECRET_ACCESS_KEY)")
            }
            return try reader.text("s3-secret-access-key")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw reader.invalid("s3-secret-access-key-file", path, "cannot be read")
        }
        let secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty else { throw reader.invalid("s3-secret-access-key-file", path, "holds no key") }
        return secret
    }
}
