import DownloadCore
import Foundation
import Glibc
import HTTPServer
import Logging
import Store
import Transfer

/// The application: the store, the transfer engine, the scheduler, webhook delivery and the API,
/// started and stopped together.
public final class DownloadService: Sendable {
    let configuration: Configuration
    let logger: Logger
    let clock: Clock
    let store: Store
    let engine: TransferEngine
    let scheduler: Scheduler
    let dispatcher: WebhookDispatcher
    let events: WebhookEvents
    let authenticator: Authenticator
    let server: HTTPServer
    let lock: DataDirectoryLock
    let housekeeper: Housekeeper

    public init(configuration: Configuration, logger: Logger, clock: Clock = .system) throws {
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        if !configuration.isLoopbackListener && configuration.apiTokens.isEmpty && configuration.apiTokensFile == nil
            && !configuration.insecure {
            throw Configuration.Invalid(description: "refusing to listen on \(configuration.listenHost) without FETCHD_API_TOKENS or FETCHD_API_TOKENS_FILE; pass --insecure to do it anyway")
        }
        for directory in [configuration.dataDirectory, configuration.partialDirectory, configuration.downloadRoot] {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw Configuration.Invalid(description: "cannot create directory \(directory): \(error.localizedDescription)")
            }
        }
        try Self.checkSameFileSystem(configuration)
        lock = try DataDirectoryLock(directory: configuration.dataDirectory)
        authenticator = try Authenticator(tokens: configuration.apiTokens, tokensFile: configuration.apiTokensFile)
        store = try Store(path: configuration.databasePath)
        engine = TransferEngine(logger: logger, network: configuration.network)
        events = WebhookEvents(globalURL: configuration.webhookURL)
        let metrics = Metrics()
        let dispatcher = WebhookDispatcher(store: store, engine: engine, configuration: configuration, metrics: metrics,
                                           clock: clock, logger: logger)
        self.dispatcher = dispatcher
        housekeeper = Housekeeper(store: store, retention: configuration.retention, clock: clock, logger: logger)
        let hub = EventHub(clock: clock)
        scheduler = Scheduler(store: store, engine: engine, configuration: configuration, events: events, hub: hub,
                              metrics: metrics, clock: clock, logger: logger, onEventsRecorded: { dispatcher.poke() })
        var http = HTTPServerConfiguration()
        http.host = configuration.listenHost
        http.port = configuration.listenPort
        http.maxBodyBytes = configuration.maxRequestBody
        http.maxConnections = configuration.maxConnections
        let downloads = DownloadsAPI(store: store, scheduler: scheduler, dispatcher: dispatcher, hub: hub, events: events,
                                     files: scheduler.files, configuration: configuration, clock: clock, ids: IDSource(),
                                     inserts: InsertBatcher(store: store))
        server = HTTPServer(configuration: http, router: Self.router(
            downloads: downloads, events: EventsAPI(store: store, hub: hub, present: { downloads.encode($0) }),
            status: StatusAPI(store: store, scheduler: scheduler, metrics: metrics, clock: clock), authenticator: authenticator,
            metrics: metrics, logger: logger), logger: logger)
        if configuration.webhookSecrets.isEmpty {
            logger.warning("no FETCHD_WEBHOOK_SECRET: webhooks are sent unsigned")
        }
    }

    /// A finished download is hard-linked from the staging directory into the download root; across
    /// file systems — or across two mounts of one, as two container volumes are — that fails, so it
    /// is tried once at start rather than found out at the first completion.
    static func checkSameFileSystem(_ configuration: Configuration) throws {
        let probe = "/" + DestinationPath.reservedPrefix + "link-check-\(getpid())"
        let staged = configuration.partialDirectory + probe
        let placed = configuration.downloadRoot + probe
        let fd = open(staged, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Configuration.Invalid(description: describeErrno("cannot write in the staging directory \(configuration.partialDirectory)")) }
        close(fd)
        defer {
            unlink(staged)
            unlink(placed)
        }
        unlink(placed)
        guard link(staged, placed) == 0 else {
            throw Configuration.Invalid(description: errno == EXDEV
                ? "the staging directory \(configuration.partialDirectory) and FETCHD_DOWNLOAD_ROOT \(configuration.downloadRoot) are not on one file system mount, so downloads cannot be moved into place atomically: set FETCHD_STAGING_DIR (--staging-dir) to a directory under the download root, e.g. \(configuration.downloadRoot)/.fetchd-partial"
                : describeErrno("cannot link from the staging directory \(configuration.partialDirectory) into \(configuration.downloadRoot)"))
        }
    }

    /// Recovers interrupted work, starts scheduling and delivery, and listens. Returns the bound port.
    public func start() throws -> Int {
        try Recovery(store: store, files: scheduler.files, partials: scheduler.partials, events: events, logger: logger)
            .run(now: clock.now())
        scheduler.poke()
        dispatcher.poke()
        housekeeper.start()
        return try server.start()
    }

    /// Stops accepting, stops transfers keeping their partial data, finishes in-flight responses.
    /// Transfers and in-flight requests are drained side by side, so the whole drain fits in one
    /// `FETCHD_SHUTDOWN_TIMEOUT`.
    public func shutdown() async {
        let timeout = configuration.shutdownTimeout
        dispatcher.stop()
        housekeeper.stop()
        async let transfersStopped: Void = scheduler.shutdown(timeout: timeout)
        async let requestsDrained: Void = server.shutdown(timeout: timeout)
        _ = await (transfersStopped, requestsDrained)
        engine.shutdown()
        store.close()
    }

    /// Re-reads the tokens file (SIGHUP).
    public func reloadTokens() throws {
        try authenticator.reload()
    }

    static func router(downloads: DownloadsAPI, events: EventsAPI, status: StatusAPI, authenticator: Authenticator,
                       metrics: Metrics, logger: Logger) -> Router {
        var router = Router()
        /// Registers a route whose requests are logged, counted and timed under its pattern; `open` routes need no token.
        func route(_ method: String, _ pattern: String, open: Bool = false,
                   _ handler: @escaping @Sendable (HTTPRequest, PathParameters, _ principal: String) async -> HTTPResponse) {
            // Built once per route; only the status varies per request.
            let requestLabels = Metrics.labels(["route": pattern, "method": method])
            let durationLabels = Metrics.labels(["route": pattern])
            router.add(method, pattern) { request, parameters in
                let started = ContinuousClock.now
                let response: HTTPResponse
                if let principal = open ? "anonymous" : authenticator.principal(for: request) {
                    response = await handler(request, parameters, principal)
                } else {
                    response = Authenticator.unauthorized()
                }
                let elapsed = started.duration(to: .now)
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                metrics.increment("fetchd_http_requests_total", labels: requestLabels + ",status=\"\(response.status)\"")
                metrics.observe("fetchd_http_request_duration_seconds", labels: durationLabels,
                                seconds: seconds, bounds: Metrics.requestBuckets)
                var line: Logger.Metadata = [
                    "http.method": "\(method)", "http.route": "\(pattern)", "http.status": "\(response.status)",
                    "duration.ms": "\((seconds * 1000 * 1000).rounded() / 1000)",
                ]
                if let id = parameters["id"] { line["download.id"] = "\(id)" }
                logger.info("request", metadata: line)
                return response
            }
        }
        route("POST", "/downloads") { request, _, principal in await downloads.create(request, principal: principal) }
        route("GET", "/downloads") { request, _, _ in downloads.list(request) }
        route("GET", "/downloads/{id}") { _, p, _ in downloads.get(p["id"] ?? "") }
        route("DELETE", "/downloads/{id}") { _, p, _ in downloads.cancel(p["id"] ?? "") }
        route("POST", "/downloads/{id}/pause") { _, p, _ in downloads.pause(p["id"] ?? "") }
        route("POST", "/downloads/{id}/resume") { _, p, _ in downloads.resume(p["id"] ?? "") }
        route("GET", "/downloads/{id}/attempts") { _, p, _ in downloads.attempts(p["id"] ?? "") }
        route("GET", "/downloads/{id}/events") { request, p, _ in
            events.stream(p["id"] ?? "", lastEventID: request.headers["Last-Event-ID"])
        }
        route("GET", "/sessions/{session}") { _, p, _ in status.session(p["session"] ?? "") }
        route("GET", "/metrics") { _, _, _ in status.prometheus() }
        route("GET", "/healthz", open: true) { _, _, _ in status.health() }
        route("GET", "/readyz", open: true) { _, _, _ in status.readiness() }
        return router
    }
}
