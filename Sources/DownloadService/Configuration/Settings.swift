/// Every setting fetchd takes, as a flag and an environment variable, with its default and help.
/// The one table that `--help`, flag parsing and the README's configuration table follow.
public struct Setting: Sendable {
    public var flag: String
    public var env: String
    public var defaultValue: String?
    public var help: String

    public init(_ flag: String, _ defaultValue: String?, _ help: String) {
        self.flag = flag
        self.env = "FETCHD_" + flag.uppercased().replacingOccurrences(of: "-", with: "_")
        self.defaultValue = defaultValue
        self.help = help
    }

    public static let all: [Setting] = [
        Setting("listen", "127.0.0.1:8080", "address:port to listen on (port 0 = any free port; the bound port is logged)"),
        Setting("data-dir", "./fetchd-data", "SQLite database and partial downloads"),
        Setting("database-url", nil, "PostgreSQL URL, e.g. postgresql://fetchd@db/fetchd: state lives there instead of SQLite"),
        Setting("node-name", nil, "this node's name in GET /nodes and logs, with FETCHD_DATABASE_URL (default: the host name)"),
        Setting("download-root", "./downloads", "every destination lives under it"),
        Setting("upload-root", "./uploads", "every upload's source lives under it (not created: fetchd only reads there)"),
        Setting("tus-chunk-size", "8MiB", "bytes of a tus upload per PATCH, 64KiB to 4GiB: a server that keeps only whole requests loses at most one to a fault"),
        Setting("staging-dir", nil, "partial downloads (default <data dir>/partial); must share the download root's file system"),
        Setting("api-tokens", nil, "comma-separated bearer tokens; when set, every endpoint but /healthz and /readyz needs one"),
        Setting("api-tokens-file", nil, "file with one bearer token per line"),
        Setting("insecure", "false", "allow listening on a non-loopback address without tokens"),
        Setting("allowed-hosts", nil, "comma-separated Host names served besides localhost, 127.0.0.1 and [::1] while no tokens are set on a loopback listener (DNS rebinding defence)"),
        Setting("max-transfers", "16", "concurrent transfers"),
        Setting("max-transfers-per-host", "6", "concurrent transfers per origin host:port"),
        Setting("max-attempts", "10", "attempts before a transient failure becomes failed"),
        Setting("retry-base-delay", "1s", "first retry delay, doubled each attempt, with jitter"),
        Setting("webhook-url", nil, "global webhook subscriber"),
        Setting("webhook-secret", nil, "whsec_… signing secret (comma-separated for rotation); without it webhooks are unsigned"),
        Setting("webhook-retry-schedule", "0,5s,5m,30m,2h,5h,10h,14h,20h,24h", "delays between webhook delivery attempts"),
        Setting("allow-private-networks", "false", "allow downloads and webhooks to loopback, private and other non-public addresses"),
        Setting("allow-networks", nil, "CIDR list allowed even when private, e.g. 10.0.0.0/8,127.0.0.2/32"),
        Setting("discretionary-window", nil, "UTC window in which discretionary jobs may start, e.g. 01:00-06:00"),
        Setting("discretionary-max-share", "0.5", "fraction of transfer slots discretionary jobs may hold"),
        Setting("discretionary-max-delay", "24h", "after this wait a discretionary job runs like a normal one"),
        Setting("max-download-bytes", nil, "per-job size cap"),
        Setting("stall-timeout", "30s", "an attempt that receives nothing for this long is retried"),
        Setting("url-refresh-timeout", "24h", "how long a job with urlRefresh waits for a new URL before it fails with url_expired"),
        Setting("disk-reserve", "1GiB", "free space kept under the download root"),
        Setting("max-queued", nil, "queued jobs cap; beyond it POST /downloads is 429"),
        Setting("watch-min-interval", "1m", "the shortest interval a watch may check at"),
        Setting("max-watches", "100000", "watches cap; beyond it POST /watches is 429"),
        Setting("max-request-body", "1MiB", "largest accepted request body (413 beyond)"),
        Setting("max-connections", "1024", "open client connections (503 beyond)"),
        Setting("shutdown-timeout", "10s", "how long SIGTERM waits for in-flight work"),
        Setting("retention", "7d", "terminal jobs and delivered webhook rows older than this are pruned"),
        Setting("log-format", "text", "text or json"),
        Setting("ca-bundle", nil, "PEM file of certificate authorities trusted in addition to the system's, for downloads and webhooks"),
        Setting("tls-client-cert", nil, "PEM client certificate presented to origins that ask for one (may hold the key)"),
        Setting("tls-client-key", nil, "PEM private key of the client certificate"),
        Setting("proxy", nil, "http://, https://, socks5:// or socks5h:// proxy (user:password@ allowed) for downloads and webhooks"),
        Setting("ftp-tls", "try", "AUTH TLS for ftp:// URLs: require (no TLS, no transfer), try, or never; ftps:// is always TLS"),
        Setting("ssh-known-hosts", nil, "OpenSSH known_hosts file of the SFTP servers' host keys; required for sftp:// (no trust on first use)"),
        Setting("ssh-key", nil, "private key file (no passphrase) for SFTP public-key login"),
        Setting("no-proxy", nil, "hosts, domains (.example.com) and CIDRs reached without the proxy"),
        Setting("retry-max-delay", "5m", "longest wait between two retries"),
        Setting("no-progress-timeout", "24h", "a job whose attempts cannot reach its origin fails after this long without a byte"),
        Setting("disk-wait", "24h", "how long a job whose disk filled waits for space before it fails with disk_full"),
        Setting("host-min-interval", "0", "least time between request starts to one host:port"),
        Setting("max-bandwidth", nil, "total rate cap of all transfers (20MiB = per second) or a UTC schedule, e.g. 08:00-18:00=2MiB,18:00-08:00=off"),
        Setting("max-upload-bandwidth", nil, "total rate cap of what all uploads send, or a UTC schedule, as max-bandwidth"),
        Setting("connections-per-download", "1", "default connections of a job (1–16): byte ranges fetched at once when the origin honours Range"),
        Setting("s3-endpoint", nil, "S3-compatible object storage for s3://bucket/key destinations, e.g. https://s3.eu-west-1.amazonaws.com or http://10.0.0.5:9000"),
        Setting("s3-region", "us-east-1", "the region requests to the object storage are signed for"),
        Setting("s3-access-key-id", nil, "the object storage's access key id"),
        Setting("s3-secret-access-key-file", nil, "file holding the object storage's secret access key"),
        Setting("s3-secret-access-key", nil, "the secret access key itself (the file is the better place for it)"),
        Setting("s3-addressing", "path", "path (endpoint/bucket/key) or virtual (bucket.endpoint/key)"),
        Setting("s3-part-size", "16MiB", "multipart upload part size, 5MiB to 5GiB: at most one part per connection is staged on disk"),
    ]
}
