/// Where objects are stored and how requests to it are signed (the service fills it from
/// `FETCHD_S3_*`).
public struct ObjectStorageSettings: Sendable {
    /// Where the bucket goes in a request's URL.
    public enum Addressing: String, Sendable {
        /// `endpoint/bucket/key`: any S3-compatible server, and IP-address endpoints.
        case path
        /// `scheme://bucket.host[:port]/key`: the bucket is part of the host name.
        case virtual
    }

    /// `scheme://host[:port]` and an optional path prefix, e.g. `http://127.0.0.1:9000` or
    /// `https://s3.eu-west-1.amazonaws.com`. Trusted like a proxy: no address policy applies to it.
    public var endpoint: String
    /// The region requests are signed for.
    public var region: String
    public var accessKeyID: String
    public var secretAccessKey: String
    public var addressing: Addressing

    public init(endpoint: String, region: String = "us-east-1", accessKeyID: String, secretAccessKey: String,
                addressing: Addressing = .path) {
        self.endpoint = endpoint
        self.region = region
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.addressing = addressing
    }

    /// Why no request made with these settings could work, or nil: for the service to refuse
    /// them at startup. Every operation of an `ObjectStorageClient` with such settings fails with
    /// `.refused(status: 0, …)` without sending anything.
    public var problem: String? {
        let endpoint: S3Endpoint
        switch S3Endpoint.parse(self.endpoint) {
        case .failure(let problem): return problem.message
        case .success(let parsed): endpoint = parsed
        }
        if addressing == .virtual && endpoint.hostIsIPAddress {
            return "virtual-host addressing needs a host name, not an IP address, in the endpoint"
        }
        // The region goes into curl's "aws:amz:<region>:s3", where a colon would end it.
        if region.isEmpty || !region.utf8.allSatisfy({ S3Encoding.isAlphanumeric($0) || $0 == UInt8(ascii: "-") }) {
            return "the region must be letters, digits and hyphens"
        }
        // curl splits "<id>:<secret>" at the first colon.
        if accessKeyID.isEmpty || accessKeyID.contains(":") { return "the access key id must be set, without a colon" }
        if secretAccessKey.isEmpty { return "the secret access key must be set" }
        return nil
    }
}

/// Printed or logged without the secret key.
extension ObjectStorageSettings: CustomStringConvertible, CustomReflectable {
    public var description: String {
        "ObjectStorageSettings(endpoint: \(endpoint), region: \(region), accessKeyID: \(accessKeyID), "
            + "secretAccessKey: [secret], addressing: \(addressing.rawValue))"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["endpoint": endpoint, "region": region, "accessKeyID": accessKeyID,
                                "secretAccessKey": "[secret]", "addressing": addressing])
    }
}
