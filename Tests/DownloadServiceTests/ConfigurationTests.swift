import DownloadService
import Testing

@Suite struct ConfigurationTests {
    @Test func defaultsNeedNothing() throws {
        let configuration = try Configuration(values: [:])
        #expect(configuration.listenHost == "127.0.0.1")
        #expect(configuration.listenPort == 8080)
        #expect(configuration.maxTransfers == 16)
        #expect(configuration.retryBaseDelay == .seconds(1))
        #expect(configuration.webhookRetrySchedule == [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400].map { .seconds($0) })
        #expect(configuration.diskReserve == 1 << 30)
        #expect(configuration.retention == .seconds(7 * 86400))
    }

    @Test func parsesUnits() throws {
        let configuration = try Configuration(values: [
            "listen": "[::1]:0", "retry-base-delay": "200ms", "max-download-bytes": "10MiB", "stall-timeout": "2",
        ])
        #expect(configuration.listenHost == "::1")
        #expect(configuration.listenPort == 0)
        #expect(configuration.retryBaseDelay == .milliseconds(200))
        #expect(configuration.maxDownloadBytes == 10 << 20)
        #expect(configuration.stallTimeout == .seconds(2))
    }

    @Test(arguments: [
        ("listen", "nowhere", "FETCHD_LISTEN"),
        ("listen", "127.0.0.1:70000", "FETCHD_LISTEN"),
        ("max-transfers", "0", "FETCHD_MAX_TRANSFERS"),
        ("max-transfers", "many", "FETCHD_MAX_TRANSFERS"),
        ("retry-base-delay", "5 parsecs", "FETCHD_RETRY_BASE_DELAY"),
        ("webhook-secret", "whsec_***", "FETCHD_WEBHOOK_SECRET"),
        ("webhook-url", "ftp://example.com/", "FETCHD_WEBHOOK_URL"),
        ("webhook-retry-schedule", "0,soon", "FETCHD_WEBHOOK_RETRY_SCHEDULE"),
        ("allow-private-networks", "perhaps", "FETCHD_ALLOW_PRIVATE_NETWORKS"),
        ("allow-networks", "10.0.0.0/33", "FETCHD_ALLOW_NETWORKS"),
        ("disk-reserve", "1 lot", "FETCHD_DISK_RESERVE"),
        ("log-format", "xml", "FETCHD_LOG_FORMAT"),
        ("allowed-hosts", "fetchd.lan:8080", "FETCHD_ALLOWED_HOSTS"),
        ("ca-bundle", "/nonexistent/ca.pem", "FETCHD_CA_BUNDLE"),
        ("tls-client-key", "/etc/hostname", "FETCHD_TLS_CLIENT_KEY"),
        ("proxy", "gopher://proxy:70", "FETCHD_PROXY"),
        ("no-proxy", "example.com", "FETCHD_NO_PROXY"),
    ])
    func badValuesNameTheSetting(flag: String, value: String, env: String) {
        #expect {
            try Configuration(values: [flag: value])
        } throws: { error in
            let message = "\(error)"
            return message.contains(env) && message.contains("--\(flag)") && !message.contains("\n")
        }
    }
}
