import DownloadCore
import Foundation
import HTTPServer
import Transfer

/// fetchd's validated configuration. Built from settings' raw text; every bad value is reported
/// as one line naming the setting.
public struct Configuration: Sendable {
    public var listenHost: String
    public var listenPort: Int
    /// Sockets passed by the service manager (socket activation): served instead of `listen`.
    public var inheritedListeners: [InheritedListener] = []
    public var dataDirectory: String
    /// PostgreSQL instead of SQLite, when set (a libpq URI).
    public var databaseURL: String?
    public var nodeName: String
    public var downloadRoot: String
    public var uploadRoot: String
    /// Bytes of a tus upload sent in one `PATCH`.
    public var tusChunkSize: Int64
    public var stagingDirectory: String?
    public var apiTokens: [String]
    public var apiTokensFile: String?
    public var insecure: Bool
    /// Lowercased `Host` names served beside the loopback ones while no tokens are set (HostCheck).
    public var allowedHosts: Set<String>
    public var maxTransfers: Int
    public var maxTransfersPerHost: Int
    public var maxAttempts: Int
    public var retryBaseDelay: Duration
    public var webhookURL: String?
    public var webhookSecrets: [String]
    public var webhookRetrySchedule: [Duration]
    public var addressPolicy: AddressPolicy
    public var discretionaryWindow: DailyWindow?
    public var discretionaryMaxShare: Double
    public var discretionaryMaxDelay: Duration
    public var maxDownloadBytes: Int64?
    public var stallTimeout: Duration
    /// How long a job with URL refresh waits for a new URL before it fails with `url_expired`.
    public var urlRefreshTimeout: Duration
    public var diskReserve: Int64
    public var maxQueued: Int?
    /// The shortest `interval` a watch takes.
    public var watchMinInterval: Duration
    public var maxWatches: Int
    public var maxRequestBody: Int
    public var maxConnections: Int
    public var shutdownTimeout: Duration
    public var retention: Duration
    public var logFormat: String
    /// CA bundle, client certificate and proxy, for downloads and webhook deliveries.
    public var network: NetworkSettings
    /// The cap on all transfers together, by time of day.
    public var maxBandwidth: BandwidthSchedule
    /// The cap on all uploads together, apart from `maxBandwidth`.
    public var maxUploadBandwidth: BandwidthSchedule
    public var hostMinInterval: Duration
    public var retryMaxDelay: Duration
    public var noProgressTimeout: Duration
    public var diskWait: Duration
    /// A job's `connections` when its body names none.
    public var connectionsPerDownload: Int
    /// Where `s3://` destinations go; nil when none is configured.
    public var objectStorage: ObjectStorageConfiguration?

    public struct Invalid: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// `values` maps a setting's flag name to its raw text; missing ones take their default.
    public init(values: [String: String]) throws(Invalid) {
        let reader = SettingReader(values: values)
        let listen = try reader.text("listen")
        guard let (host, port) = Self.splitHostPort(listen) else {
            throw reader.invalid("listen", listen, "expected address:port, e.g. 127.0.0.1:8080 or [::1]:8080")
        }
        listenHost = host
        listenPort = port
        dataDirectory = try reader.text("data-dir")
        databaseURL = try reader.optional("database-url").map { url throws(Invalid) in
            // The URL can hold a password: the error shows only its scheme.
            guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") else {
                throw Invalid(description: "invalid FETCHD_DATABASE_URL (--database-url): expected a postgresql:// URL")
            }
            return url
        }
        nodeName = try reader.optional("node-name").map { name throws(Invalid) in
            guard name.utf8.count <= 200, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
                throw reader.invalid("node-name", name, "expected up to 200 letters, digits, '-', '_' or '.'")
            }
            return name
        } ?? ProcessInfo.processInfo.hostName
        downloadRoot = try reader.text("download-root")
        uploadRoot = try reader.text("upload-root")
        let tusChunkText = try reader.text("tus-chunk-size")
        tusChunkSize = try reader.size("tus-chunk-size", tusChunkText)
        guard (64 << 10...4 << 30).contains(tusChunkSize) else { throw reader.invalid("tus-chunk-size", tusChunkText, "expected 64KiB to 4GiB") }
        stagingDirectory = reader.optional("staging-dir")
        apiTokens = reader.list("api-tokens")
        apiTokensFile = reader.optional("api-tokens-file")
        insecure = try reader.bool("insecure")
        allowedHosts = Set(try reader.list("allowed-hosts").map { item throws(Invalid) in
            guard HostCheck.isValidAllowedHost(item) else {
                throw reader.invalid("allowed-hosts", item, "expected host names like fetchd.lan, without a port or scheme")
            }
            return item.lowercased()
        })
        maxTransfers = try reader.integer("max-transfers", in: 1...100_000)
        maxTransfersPerHost = try reader.integer("max-transfers-per-host", in: 1...100_000)
        maxAttempts = try reader.integer("max-attempts", in: 1...1000)
        retryBaseDelay = try reader.duration("retry-base-delay")
        webhookURL = try reader.optional("webhook-url").map { url throws(Invalid) in
            if case .failure = HTTPURL.parse(url) { throw reader.invalid("webhook-url", url, "expected an absolute http or https URL") }
            return url
        }
        webhookSecrets = reader.list("webhook-secret")
        for secret in webhookSecrets where WebhookSigner.key(fromSecret: secret) == nil {
            throw Invalid(description: "invalid FETCHD_WEBHOOK_SECRET (--webhook-secret): expected whsec_ followed by base64")
        }
        webhookRetrySchedule = try reader.list("webhook-retry-schedule").map { item throws(Invalid) in
            guard let delay = Units.duration(item) else { throw reader.invalid("webhook-retry-schedule", item, "expected durations like 0,5s,5m") }
            return delay
        }
        if webhookRetrySchedule.isEmpty { throw reader.invalid("webhook-retry-schedule", "", "needs at least one delay") }
        let allowPrivate = try reader.bool("allow-private-networks")
        let networks = try reader.list("allow-networks").map { item throws(Invalid) in
            guard let cidr = CIDR(item) else { throw reader.invalid("allow-networks", item, "expected CIDR blocks like 10.0.0.0/8") }
            return cidr
        }
        addressPolicy = AddressPolicy(allowPrivate: allowPrivate, allowedNetworks: networks)
        discretionaryWindow = try reader.optional("discretionary-window").map { text throws(Invalid) in
            guard let window = DailyWindow(text) else { throw reader.invalid("discretionary-window", text, "expected a UTC window like 01:00-06:00") }
            return window
        }
        discretionaryMaxShare = try reader.fraction("discretionary-max-share")
        discretionaryMaxDelay = try reader.duration("discretionary-max-delay")
        maxDownloadBytes = try reader.optional("max-download-bytes").map { text throws(Invalid) in try reader.size("max-download-bytes", text) }
        stallTimeout = try reader.duration("stall-timeout")
        urlRefreshTimeout = try reader.duration("url-refresh-timeout")
        diskReserve = try reader.size("disk-reserve", reader.text("disk-reserve"))
        maxQueued = try reader.optional("max-queued").map { _ throws(Invalid) in try reader.integer("max-queued", in: 0...Int(Int32.max)) }
        watchMinInterval = try reader.duration("watch-min-interval")
        guard watchMinInterval >= .milliseconds(100) else {
            throw reader.invalid("watch-min-interval", try reader.text("watch-min-interval"), "expected at least 100ms")
        }
        maxWatches = try reader.integer("max-watches", in: 0...Int(Int32.max))
        maxRequestBody = Int(try reader.size("max-request-body", reader.text("max-request-body")))
        maxConnections = try reader.integer("max-connections", in: 1...1_000_000)
        shutdownTimeout = try reader.duration("shutdown-timeout")
        retention = try reader.duration("retention")
        logFormat = try reader.text("log-format")
        guard ["text", "json"].contains(logFormat) else { throw reader.invalid("log-format", logFormat, "expected text or json") }
        network = try Self.network(reader)
        hostMinInterval = try reader.duration("host-min-interval")
        retryMaxDelay = try reader.duration("retry-max-delay")
        noProgressTimeout = try reader.duration("no-progress-timeout")
        diskWait = try reader.duration("disk-wait")
        maxBandwidth = try reader.bandwidth("max-bandwidth")
        maxUploadBandwidth = try reader.bandwidth("max-upload-bandwidth")
        connectionsPerDownload = try reader.integer("connections-per-download", in: SubmissionValidator.connectionsRange)
        objectStorage = try ObjectStorageConfiguration.read(reader)
    }

    private static func network(_ reader: SettingReader) throws(Invalid) -> NetworkSettings {
        let tls: TLSSettings
        do {
            tls = try TLSSettings(caBundle: reader.optional("ca-bundle"), clientCertificate: reader.optional("tls-client-cert"),
                                  clientKey: reader.optional("tls-client-key"))
        } catch {
            switch error {
            case .caBundle(let reason): throw reader.invalid("ca-bundle", reader.optional("ca-bundle") ?? "", reason)
            case .clientCertificate(let reason): throw reader.invalid("tls-client-cert", reader.optional("tls-client-cert") ?? "", reason)
            case .clientKey(let reason): throw reader.invalid("tls-client-key", reader.optional("tls-client-key") ?? "", reason)
            }
        }
        let remoteFiles = try remoteFileSettings(reader)
        guard let url = reader.optional("proxy") else {
            if reader.optional("no-proxy") != nil { throw reader.invalid("no-proxy", reader.optional("no-proxy") ?? "", "needs FETCHD_PROXY") }
            return NetworkSettings(tls: tls, remoteFiles: remoteFiles)
        }
        do {
            return NetworkSettings(tls: tls, proxy: try ProxySettings(url: url, noProxy: reader.list("no-proxy")), remoteFiles: remoteFiles)
        } catch {
            // The value may carry credentials: name the setting, never echo it.
            throw Invalid(description: "invalid FETCHD_PROXY (--proxy): \(error.reason)")
        }
    }

    /// FTP's TLS mode, and the SSH files, which must be readable now rather than fail every job later.
    private static func remoteFileSettings(_ reader: SettingReader) throws(Invalid) -> RemoteFileSettings {
        let mode = try reader.text("ftp-tls").lowercased()
        guard let ftpTLS = RemoteFileSettings.FTPTLS(rawValue: mode) else {
            throw reader.invalid("ftp-tls", mode, "expected require, try or never")
        }
        for flag in ["ssh-known-hosts", "ssh-key"] {
            if let path = reader.optional(flag), access(path, R_OK) != 0 { throw reader.invalid(flag, path, "cannot read the file") }
        }
        return RemoteFileSettings(ftpTLS: ftpTLS, knownHosts: reader.optional("ssh-known-hosts"), sshKey: reader.optional("ssh-key"))
    }

    /// "127.0.0.1:8080", "[::1]:8080", "localhost:0".
    static func splitHostPort(_ text: String) -> (String, Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            return nil
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        return (host, port)
    }

    public var capacity: Capacity {
        Capacity(maxTransfers: maxTransfers, maxTransfersPerHost: maxTransfersPerHost, discretionaryMaxShare: discretionaryMaxShare,
                 discretionaryMaxDelay: discretionaryMaxDelay, discretionaryWindow: discretionaryWindow,
                 diskReserve: diskReserve, hostMinInterval: hostMinInterval)
    }

    public var isLoopbackListener: Bool {
        guard inheritedListeners.isEmpty else { return inheritedListeners.allSatisfy(\.isLoopback) }
        return listenHost == "localhost" || listenHost == "::1" || listenHost.hasPrefix("127.")
    }

    /// Where fetchd listens, for messages: the passed sockets, else `listen`'s host.
    public var listenerDescription: String {
        inheritedListeners.isEmpty ? listenHost : inheritedListeners.map(\.description).joined(separator: ", ")
    }

    public var databasePath: String { dataDirectory + "/fetchd.sqlite" }
    public var partialDirectory: String { stagingDirectory ?? dataDirectory + "/partial" }
}

/// Reads settings' raw values, falling back to defaults, and phrases errors the same way every time.
struct SettingReader {
    let values: [String: String]

    func raw(_ flag: String) -> String? {
        if let value = values[flag] { return value }
        return Setting.all.first { $0.flag == flag }?.defaultValue
    }

    func invalid(_ flag: String, _ value: String, _ expectation: String) -> Configuration.Invalid {
        let env = Setting.all.first { $0.flag == flag }?.env ?? flag
        return Configuration.Invalid(description: "invalid \(env) (--\(flag)) '\(value)': \(expectation)")
    }

    func optional(_ flag: String) -> String? {
        guard let value = raw(flag), !value.isEmpty else { return nil }
        return value
    }

    func text(_ flag: String) throws(Configuration.Invalid) -> String {
        guard let value = optional(flag) else { throw invalid(flag, "", "must not be empty") }
        return value
    }

    func list(_ flag: String) -> [String] {
        (raw(flag) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func bool(_ flag: String) throws(Configuration.Invalid) -> Bool {
        switch try text(flag).lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        case let other: throw invalid(flag, other, "expected true or false")
        }
    }

    func integer(_ flag: String, in range: ClosedRange<Int>) throws(Configuration.Invalid) -> Int {
        let value = try text(flag)
        guard let number = Int(value), range.contains(number) else {
            throw invalid(flag, value, "expected a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    func fraction(_ flag: String) throws(Configuration.Invalid) -> Double {
        let value = try text(flag)
        guard let number = Double(value), number >= 0, number <= 1 else { throw invalid(flag, value, "expected a number from 0 to 1") }
        return number
    }

    func duration(_ flag: String) throws(Configuration.Invalid) -> Duration {
        let value = try text(flag)
        guard let duration = Units.duration(value) else { throw invalid(flag, value, "expected a duration like 200ms, 5s, 10m, 24h or 7d") }
        return duration
    }

    /// A rate cap or a UTC schedule of them; none when the setting is not given.
    func bandwidth(_ flag: String) throws(Configuration.Invalid) -> BandwidthSchedule {
        guard let text = optional(flag) else { return .unlimited }
        switch BandwidthSchedule.parse(text) {
        case .success(let schedule): return schedule
        case .failure(let problem): throw invalid(flag, text, problem.message)
        }
    }

    func size(_ flag: String, _ value: String) throws(Configuration.Invalid) -> Int64 {
        guard let bytes = Units.size(value) else { throw invalid(flag, value, "expected a size like 512, 64KiB, 10MiB or 1GiB") }
        return bytes
    }
}
