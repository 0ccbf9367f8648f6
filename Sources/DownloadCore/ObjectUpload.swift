/// The multipart upload of an object destination as far as it is committed: what a restart, a
/// retry or another node goes on from. A part counts once its number, size and ETag are here;
/// the origin download resumes at `end`, and the object's digest from `digestState`.
///
/// A tus upload's resource is kept the same way (`tus(resource:)`): what goes on after a fault
/// and what is terminated once its job ended. Its offset is the server's to say, so it has no parts.
public struct ObjectUpload: Sendable, Equatable {
    /// One uploaded part, in order from 1: its bytes are `size` bytes of the object from the end
    /// of the part before.
    public struct Part: Sendable, Equatable {
        public var number: Int
        public var size: Int64
        /// As the storage answered it (quoted), for `CompleteMultipartUpload`.
        public var etag: String

        public init(number: Int, size: Int64, etag: String) {
            self.number = number
            self.size = size
            self.etag = etag
        }
    }

    /// The object's key, chosen when the upload was created (a prefix's name, a free name of a rename).
    public var key: String
    public var uploadID: String
    public var parts: [Part]
    /// The digests' state after the last part (opaque text the transfer layer writes and reads);
    /// empty before the first part.
    public var digestState: String

    public init(key: String, uploadID: String, parts: [Part] = [], digestState: String = "") {
        self.key = key
        self.uploadID = uploadID
        self.parts = parts
        self.digestState = digestState
    }

    /// The upload id a tus resource is kept under: no S3 upload id is this short.
    static let tusUploadID = "tus"

    /// A tus upload resource, by its URL.
    public static func tus(resource: String) -> ObjectUpload {
        ObjectUpload(key: resource, uploadID: tusUploadID)
    }

    /// The URL of the tus upload resource this is, or nil for a multipart upload.
    public var tusResource: String? { uploadID == Self.tusUploadID ? key : nil }

    /// The upload id kept while a multipart upload is being created (no S3 upload id is this short).
    static let creatingUploadID = "creating"

    /// A multipart upload of `key` about to be created, kept before CreateMultipartUpload is sent:
    /// a crash before its answer is kept leaves an upload nobody knows the id of, which the next
    /// attempt, or the sweep of an ended job, finds under the key and aborts.
    public static func creating(key: String) -> ObjectUpload {
        ObjectUpload(key: key, uploadID: creatingUploadID)
    }

    /// Whether this is only the intent to create a multipart upload (`creating(key:)`).
    public var isBeingCreated: Bool { uploadID == Self.creatingUploadID }

    /// The upload id kept with the key of an object put whole (no S3 upload id is this short).
    static let puttingUploadID = "put"

    /// The free name a rename chose for an object put whole, kept before the `PutObject` is sent:
    /// a crash before its answer is kept finds the object there as its own on the next attempt,
    /// rather than choosing the next free name and storing it twice. The storage holds no upload.
    public static func putting(key: String) -> ObjectUpload {
        ObjectUpload(key: key, uploadID: puttingUploadID)
    }

    /// Whether this is only the key of an object put whole (`putting(key:)`).
    public var isBeingPut: Bool { uploadID == Self.puttingUploadID }

    /// Bytes of the object uploaded and committed: where the origin download goes on.
    public var end: Int64 { parts.reduce(0) { $0 + $1.size } }

    /// One line each: the key, the upload id, the digest state, then `number size etag` per part.
    /// None of them holds a line break (keys follow the destination rules, the rest is the
    /// storage's and fetchd's own tokens).
    public var text: String {
        ([key, uploadID, digestState] + parts.map { "\($0.number) \($0.size) \($0.etag)" }).joined(separator: "\n")
    }

    /// What `text` wrote, or nil for anything else.
    public static func parse(_ text: String) -> ObjectUpload? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 3, !lines[0].isEmpty, !lines[1].isEmpty else { return nil }
        var parts: [Part] = []
        for line in lines.dropFirst(3) {
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count == 3, let number = Int(fields[0]), number == parts.count + 1,
                  let size = Int64(fields[1]), size > 0 else { return nil }
            parts.append(Part(number: number, size: size, etag: String(fields[2])))
        }
        return ObjectUpload(key: String(lines[0]), uploadID: String(lines[1]), parts: parts, digestState: String(lines[2]))
    }
}
