import Crypto
import DownloadCore
@testable import DownloadService
import Foundation
import Logging
import Persistence
import SQLiteStore
import Synchronization
import Testing

/// One fetchd data directory for one test: a real SQLite store, the partial directory and the
/// download root in a fresh temporary directory (removed afterwards), and a fake clock.
final class ServiceFixture: Sendable {
    /// 2026-01-01T12:00:00Z: outside a 01:00-06:00 window.
    static let start: Int64 = 1_767_268_800_000
    static let webhookURL = "http://hooks.example/all"
    static let retryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(10))
    static let quiet = Logger(label: "fetchd.test") { _ in SwiftLogNoOpLogHandler() }

    let directory: String
    let store: SQLiteStore
    let clock = FakeClock(start)
    let files: DestinationFiles
    let partials: PartialFiles
    let events = WebhookEvents(globalURL: webhookURL)
    let metrics = Metrics()
    /// The state changes announced to event streams, in order.
    let published = Mutex<[Download]>([])

    init() throws {
        directory = NSTemporaryDirectory() + "fetchd-service-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/partial", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/downloads", withIntermediateDirectories: true)
        store = try SQLiteStore(path: directory + "/fetchd.sqlite", readers: 1, statePayload: DownloadJSON.logged)
        files = DestinationFiles(root: directory + "/downloads")
        partials = PartialFiles(directory: directory + "/partial")
    }

    deinit {
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// What settlement works with here; `read` stands in for reading a job back from the store.
    /// The state changes it announces are kept in `published` and, as in the service, go to `hub`.
    func settlementContext(read: (@Sendable (String) throws -> Download?)? = nil, hub: EventHub? = nil) -> SettlementContext {
        let store = store
        return SettlementContext(files: files, partials: partials, retryPolicy: Self.retryPolicy, urlRefreshTimeout: .seconds(86400), events: events,
                                 metrics: metrics, logger: Self.quiet,
                                 publish: { job in
                                     self.published.withLock { $0.append(job) }
                                     hub?.publish(job.id, .state(job))
                                 },
                                 eventsRecorded: {}, read: read ?? { try store.download(id: $0) }, sources: UploadSources(root: directory + "/uploads"))
    }

    /// The start's recovery over this store and these files.
    var recovery: Recovery {
        Recovery(store: store, files: files, partials: partials, events: events,
                 watches: WatchChecks(events: events, ids: IDSource(), times: CheckTimes()), logger: Self.quiet,
                 sources: UploadSources(root: directory + "/uploads"))
    }

    /// The configuration of `settings` (flag names), with no disk space held in reserve unless they say.
    func configuration(_ settings: [String: String]) throws -> Configuration {
        try Configuration(values: settings.merging(["disk-reserve": "0"]) { mine, _ in mine })
    }

    /// A scheduler over this store and `transfers`, with the limits of `settings` (flag names).
    /// `store`: the fixture's own unless another is given (one that wraps it); `hub`: where it and
    /// its settlements announce changes, a new one unless given.
    func scheduler(_ settings: [String: String], transfers: FakeTransfers, store: (any JobStore)? = nil,
                   hub: EventHub? = nil, uploadRoot: String? = nil) throws -> Scheduler {
        let configuration = try configuration(settings)
        let hub = hub ?? EventHub(clock: clock.clock)
        return Scheduler(store: store ?? self.store, transfers: transfers, template: TransferTemplate(configuration: configuration),
                         settlement: settlementContext(hub: hub), policy: SchedulingPolicy(capacity: configuration.capacity),
                         disk: DiskSpace(paths: [partials.directory, files.root]),
                         uploadSources: uploadRoot.map(UploadSources.init(root:)), hub: hub,
                         clock: clock.clock, logger: Self.quiet)
    }

    /// Stores a queued job for `http://<host>/<id>` into `files/<id>`, created now unless told otherwise;
    /// `adjust` sets any other field of the submission.
    @discardableResult
    func submit(_ id: String, host: String = "origin.example", session: String = "s", priority: Double = 0.5,
                discretionary: Bool = false, createdAt: Int64? = nil, expectedSHA256: String? = nil,
                connections: Int? = nil, _ adjust: (inout NewDownload) -> Void = { _ in }) throws -> Download {
        let url = "http://\(host)/\(id)"
        var submission = NewDownload(url: url, parsedURL: try HTTPURL.parse(url).get(), destination: Destination(stored: "files/\(id)"))
        submission.session = session
        submission.priority = priority
        submission.discretionary = discretionary
        submission.sha256 = expectedSHA256
        submission.connections = connections
        adjust(&submission)
        let job = submission.makeDownload(id: id, now: createdAt ?? clock.now)
        #expect(try store.insert(job, idempotency: nil) == .created)
        return job
    }

    /// Claims a queued job as the scheduler does when it starts an attempt.
    func claim(_ id: String) throws -> Download {
        let now = clock.now
        let result = try store.claim(ClaimPass(
            now: now, agedBefore: now, agingDelay: 0, candidates: { _ in (limit: 100, excludingHosts: []) },
            choose: { job in
                guard job.id == id else { return nil }
                var running = job
                running.state = .running
                running.attempts += 1
                running.startedAt = now
                return running
            }))
        return try #require(result.claimed.first)
    }

    /// Commits a settlement's write as the scheduler does: the placed file's directory synced, the
    /// changes in one transaction, then what follows the commit.
    @discardableResult
    func commit(_ write: JobWrite) throws -> [Bool] {
        #expect(PlacedDirectory.sync(write.placedIn.map { [$0] } ?? []) == nil)
        let results = try store.apply(write.changes)
        write.committed(results)
        return results
    }

    func job(_ id: String) throws -> Download {
        try #require(try store.download(id: id))
    }

    /// The types of the webhook events due to the global subscriber now.
    func webhooksDue() throws -> [String] {
        try store.dueDeliveries(now: clock.now, limit: 100, excluding: []).filter { $0.url == Self.webhookURL }.map(\.type)
    }

    func partialExists(_ id: String) -> Bool {
        FileManager.default.fileExists(atPath: partials.path(id))
    }

    /// The bytes at a destination under the download root, nil if there is no file.
    func destinationBytes(_ destination: String) -> [UInt8]? {
        FileManager.default.contents(atPath: files.root + "/" + destination).map { [UInt8]($0) }
    }

    /// Writes a job's partial file; returns the SHA-256 (hex) of its bytes.
    @discardableResult
    func writePartial(_ id: String, _ bytes: [UInt8]) throws -> String {
        try writeFile(partials.path(id), bytes)
    }
}

/// Writes a file; returns the SHA-256 (hex) of its bytes.
@discardableResult
func writeFile(_ path: String, _ bytes: [UInt8]) throws -> String {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

/// The file's length; 0 if there is none.
func fileSize(_ path: String) -> Int64 {
    var info = stat()
    return stat(path, &info) == 0 ? Int64(info.st_size) : 0
}
