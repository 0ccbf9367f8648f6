import DownloadCore

/// One HTTP attempt for the engine to run: where to fetch from, where the body goes, and the limits.
public struct TransferRequest: Sendable {
    public enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
        case put = "PUT"
        /// With `bodyFile` (tus sends each chunk of an upload so).
        case patch = "PATCH"
        case delete = "DELETE"
        /// Without a body (tus asks a server's extensions so).
        case options = "OPTIONS"
        /// The response's head only (CURLOPT_NOBODY).
        case head = "HEAD"
    }

    /// `length` bytes of the file at `path` from `offset`: a request body read as it is sent.
    public struct FileRange: Sendable, Equatable {
        public var path: String
        public var offset: Int64
        public var length: Int64
        /// A descriptor of the file open already (an upload's source, opened without following
        /// links and checked against its pin): read through a duplicate of it, and `path` only
        /// names it in errors. It must stay open until the transfer has started.
        public var descriptor: Int32?
        /// The SHA-256 of the range is computed as curl reads it to send it, and comes back as the
        /// result's `bodySHA256`: the bytes are hashed once, where they are read. That puts the
        /// hash on the engine's thread (a read is at most 1 MiB, about 0.5 ms of SHA-256); a
        /// thread of its own that read the file again competed with the server for the cores, and
        /// a 512 MiB PUT to nginx on loopback ran at 0.94 × `curl -T`'s rate instead of 1.05 ×
        /// (two cores, eight rounds in turn).
        public var hashed: Bool

        public init(path: String, offset: Int64, length: Int64, descriptor: Int32? = nil, hashed: Bool = false) {
            self.path = path
            self.offset = offset
            self.length = length
            self.descriptor = descriptor
            self.hashed = hashed
        }
    }

    /// AWS Signature Version 4 for every request of the transfer (CURLOPT_AWS_SIGV4), with the
    /// key pair as the credentials. Headers the request carries are signed with it, so send only
    /// those the service needs.
    public struct AWSSigning: Sendable, Equatable {
        public var region: String
        public var service: String
        public var accessKeyID: String
        public var secretAccessKey: String

        public init(region: String, service: String = "s3", accessKeyID: String, secretAccessKey: String) {
            self.region = region
            self.service = service
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
        }
    }

    public enum Sink: Sendable {
        /// Download into this file. If it already has N > 0 bytes and `resumeValidator` is set, send
        /// `Range: bytes=N-` and `If-Range: <validator>`; a 206 whose Content-Range starts at N appends;
        /// a 200 truncates and starts over; a 206 with any other Content-Range fails with `.rangeMismatch`
        /// and truncates the file (so the next attempt starts clean); a 416 with `Content-Range: bytes */N`
        /// means the file was already complete.
        /// Without a validator, an existing partial file is truncated (no Range sent). An empty
        /// validator sends Range without If-Range (partial data the caller vouches for otherwise).
        case file(path: String, resumeValidator: String?)
        /// Bytes `from..<to` of the representation, one range of a segmented download
        /// (`SegmentedDownload` makes these): sends `Range: bytes=from-(to-1)` and
        /// `If-Range: <validator>`, and writes the body at its offsets in the file at `path`, leaving
        /// the rest of the file as it is. Only a 206 starting at `from` and ending within the range is
        /// taken; anything else 2xx (a 200: Range not honoured, or the validator no longer matches)
        /// fails with `.rangeMismatch` and writes nothing. No digest: the result's `bytesOnDisk` is
        /// the range's next offset.
        case segment(path: String, from: Int64, to: Int64, validator: String)
        /// Keep the response body in memory (webhook responses); bodies over `limit` are truncated,
        /// not an error.
        case memory(limit: Int)
    }

    public var url: String
    public var method: Method = .get
    /// Extra request headers.
    public var headers: [(String, String)] = []
    /// POST or PUT body, sent with Content-Length and without `Expect: 100-continue`.
    public var body: [UInt8] = []
    /// PUT or POST: the body is this part of a file instead, read while it is sent (and read again
    /// from its start if curl must send it again: on a new connection, after a 307 or 308).
    public var bodyFile: FileRange? {
        get { extras.bodyFile }
        set { extras.bodyFile = newValue }
    }
    public var signing: AWSSigning? {
        get { extras.signing }
        set { extras.signing = newValue }
    }
    /// An `ftp`, `ftps` or `sftp` file's `ETag` (its size and modification time) as an earlier
    /// transfer reported it: while the file still has them, it is not fetched, and the transfer
    /// ends as an HTTP origin answers `If-None-Match`, with a `304`. Ignored for HTTP.
    public var remoteFileHeld: String? {
        get { extras.remoteFileHeld }
        set { extras.remoteFileHeld = newValue }
    }
    public var sink: Sink
    public var followRedirects = true
    /// With `bodyFile` and an `ftp://`, `ftps://` or `sftp://` URL: go on from the size of the
    /// server's file (SIZE, or a stat) by appending the rest of `bodyFile` to it; a file the
    /// server does not have starts at byte 0. Otherwise the file is sent whole, replacing the
    /// server's. The result's `bytesOnDisk` is then what the server holds.
    public var appendsAtServerSize = false
    /// Memory sink: the final response's header fields are kept (`TransferResult.responseHeaders`).
    public var keepsResponseHeaders = false
    /// CURLOPT_MAXREDIRS (libcurl 7.88 defaults to unlimited).
    public var maxRedirects = 10
    /// Cap on the total size of the file (or of a memory body): fails with `.tooLarge`.
    public var maxBytes: Int64? = nil
    /// Seconds allowed for connecting.
    public var connectTimeout: Double = 30
    /// Once connected, receiving nothing for this many seconds fails with `.timeout`.
    public var stallTimeout: Double = 30
    /// Seconds allowed for the whole attempt (used for webhooks).
    public var totalTimeout: Double? = nil
    public var addressPolicy: AddressPolicy = .publicOnly
    /// This transfer's own rate cap in bytes per second (a job's `maxBytesPerSecond`), within the
    /// engine's shared budget (`TransferEngine.setBandwidthLimit`): held by the engine's bandwidth
    /// budget and by CURLOPT_MAX_RECV_SPEED_LARGE (which also makes curl's receive buffer small);
    /// with a `bodyFile`, what it sends is capped too (CURLOPT_MAX_SEND_SPEED_LARGE).
    public var maxSpeedBytesPerSecond: Int64? = nil
    /// A digest to compute while writing the file besides SHA-256 (always computed): the
    /// algorithm of the job's `checksum`, when it is not sha256. See `TransferResult.extraDigest`.
    public var extraDigest: DigestAlgorithm? = nil
    /// File sink: asks for only this many bytes from where the file starts or resumes, as the
    /// first connection of a download that may go on over several (`Range: bytes=N-(N+length-1)`,
    /// with `If-Range` when resuming). A 206 that carries that part of a larger representation
    /// ends the transfer there, without a failure and without a digest (`TransferResult.partReceived`);
    /// a 200, or a 206 that reaches the end, is taken as for any request. The part tells the size,
    /// the validator and whether the origin honours `Range`, and leaves no connection to close
    /// half-read before the next requests go out.
    public var firstPartLength: Int64? = nil
    /// File sink: how far the file may grow for now (see `WriteLimit`); nil for no limit.
    public var writeLimit: WriteLimit? = nil
    /// File sink: false computes no digest of the file (the caller hashes what it reads back);
    /// the result then has no `sha256`.
    public var hashesFile = true

    /// What only uploads, object storage and FTP or SFTP files set, behind one reference that a
    /// plain download leaves nil: every running transfer holds its request, and inline these made
    /// each one 130 bytes larger. (Their flags stay inline, beside `followRedirects`: a Bool
    /// there takes no more room, and a box for one would be an allocation per request.)
    private struct Extras: Sendable, Equatable {
        var bodyFile: FileRange?
        var signing: AWSSigning?
        var remoteFileHeld: String?
    }

    private var extrasBox: Boxed<Extras>?

    private var extras: Extras {
        get { extrasBox?.value ?? Extras() }
        set { extrasBox = Boxed(newValue) }
    }

    public init(url: String, sink: Sink) {
        self.url = url
        self.sink = sink
    }
}
