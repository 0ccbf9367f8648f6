/// Where the object storage is and how requests to it are signed (FETCHD_S3_*).
public struct ObjectStorageSettings: Sendable {
    public enum Addressing: String, Sendable {
        /// `endpoint/bucket/key`
        case path
        /// `scheme://bucket.host/key`
        case virtual
    }

    public var endpoint: String
    public var region: String
    public var accessKeyID: String
    public var secretAccessKey: String
    public var addressing: Addressing

    public init(endpoint: String, region: String, accessKeyID: String, secretAccessKey: String, addressing: Addressing) {
        self.endpoint = endpoint
        self.region = region
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.addressing = addressing
    }
}
