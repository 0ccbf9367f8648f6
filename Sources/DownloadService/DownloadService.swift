import DownloadCore
import Foundation
import Glibc
import HTTPServer
import Logging
import Persistence
import Transfer

/// The application: the store, the transfer engine, the scheduler, webhook delivery and the API,
/// started and stopped together. This is the composition root: it builds every collaborator and
/// hands each only what it uses.
public final class DownloadService: Sendable {
    let configuration: Configuration
    let logger: Logger
    let clock: Clock
    let store: any JobStore
    let engine: TransferEngine
    let scheduler: Scheduler
    let dispatcher: WebhookDispatcher
    let recovery: Recovery
    let authenticator: Authenticator
    let server: HTTPServer
    let lock: DataDirectoryLock
    let housekeeper: Housekeeper
    let watchKeeper: WatchKeeper
    let bandwidth: BandwidthPlan
    let uploadBandwidth: BandwidthPlan
    /// With a store shared by many nodes: this node's lease and the cluster's upkeep.
    let heartbeat: NodeHeartbeat?
    let eventRelay: ClusterEventRelay?

    public init(configuration: Configuration, logger: Logger, clock: Clock = .system) throws {
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        if !configuration.isLoopbackListener && configuration.apiTokens.isEmpty && configuration.apiTokensFile == nil
            && !configuration.insecure {
            throw Configuration.Invalid(description: "refusing to listen on \(configuration.listenerDescription) without FETCHD_API_TOKENS or FETCHD_API_TOKENS_FILE; pass --insecure to do it anyway")
        }
        try DirectoryCreation.create(configuration.dataDirectory, setting: "data-dir")
        try DirectoryCreation.create(configuration.partialDirectory,
                                     setting: configuration.stagingDirectory == nil ? "data-dir" : "staging-dir")
        try DirectoryCreation.create(configuration.downloadRoot, setting: "download-root")
        try Self.checkSameFileSystem(configuration)
        lock = try DataDirectoryLock(directory: configuration.dataDirectory)
        authenticator = try Authenticator(tokens: configuration.apiTokens, tokensFile: configuration.apiTokensFile)
        let store = try Self.openStore(configuration, logger: logger)
        self.store = store
        let engine = TransferEngine(logger: logger, network: configuration.network)
        self.engine = engine
        let events = WebhookEvents(globalURL: configuration.webhookURL)
        let metrics = Metrics()
        let files = DestinationFiles(root: configuration.downloadRoot)
        let sources = UploadSources(root: configuration.uploadRoot)
        let partials = PartialFiles(directory: configuration.partialDirectory)
        let disk = DiskSpace(paths: [configuration.partialDirectory, configuration.downloadRoot])
        let hub = EventHub(clock: clock)
        let dispatcher = WebhookDispatcher(
            store: store,
            sender: EngineWebhookSender(transfers: engine, signer: WebhookSigner(secrets: configuration.webhookSecrets),
                                        addressPolicy: configuration.addressPolicy),
            policy: DeliveryPolicy(schedule: configuration.webhookRetrySchedule), metrics: metrics, clock: clock, logger: logger)
        self.dispatcher = dispatcher
        let template = TransferTemplate(configuration: configuration)
        let storageClient = configuration.objectStorage.map { Self.objectStorageClient($0, engine: engine) }
        let sweeper = UploadSweeper(store: store, client: storageClient, tus: TusTermination(template: template, transfers: engine),
                                    retention: configuration.retention, clock: clock, logger: logger)
        let objectStorage = configuration.objectStorage.flatMap { storage in
            storageClient.map { ObjectStorage(client: $0, partSize: storage.partSize, sweeper: sweeper) }
        }
        housekeeper = Housekeeper(store: store, retention: configuration.retention, partials: partials, sources: sources,
                                  clock: clock, logger: logger, beforePruning: { sweeper.sweep() })
        bandwidth = BandwidthPlan(schedule: configuration.maxBandwidth, clock: clock, logger: logger) {
            engine.setBandwidthLimit(bytesPerSecond: $0)
        }
        uploadBandwidth = BandwidthPlan(schedule: configuration.maxUploadBandwidth, name: "upload bandwidth cap", clock: clock,
                                        logger: logger) {
            engine.setUploadBandwidthLimit(bytesPerSecond: $0)
        }
        let ids = IDSource()
        let checkTimes = CheckTimes()
        let watchChecks = WatchChecks(events: events, ids: ids, times: checkTimes)
        recovery = Recovery(store: store, files: files, partials: partials, events: events, watches: watchChecks, logger: logger,
                            sources: sources)
        let settlement = SettlementContext(
            files: files, partials: partials,
            retryPolicy: RetryPolicy(maxAttempts: configuration.maxAttempts, baseDelay: configuration.retryBaseDelay,
                                     maxDelay: configuration.retryMaxDelay, noProgressTimeout: configuration.noProgressTimeout,
                                     diskWait: configuration.diskWait),
            urlRefreshTimeout: configuration.urlRefreshTimeout,
            events: events, metrics: metrics, logger: logger,
            publish: { hub.publish($0.id, .state($0)) }, eventsRecorded: { dispatcher.poke() },
            read: { try store.download(id: $0) }, sources: sources, watches: watchChecks)
        let scheduler = Scheduler(store: store, transfers: engine, template: template,
                                  settlement: settlement, policy: SchedulingPolicy(capacity: configuration.capacity),
                                  disk: disk, objectStorage: objectStorage, uploadSources: sources, tusChunkSize: configuration.tusChunkSize, sweeper: sweeper, hub: hub, clock: clock, logger: logger)
        self.scheduler = scheduler
        checkTimes.bind { scheduler.jobStored(runAt: $0) }
        watchKeeper = WatchKeeper(store: store, checks: watchChecks, clock: clock, logger: logger) { scheduler.jobStored(runAt: $0) }
        heartbeat = configuration.databaseURL == nil ? nil : NodeHeartbeat(
            store: store, scheduler: scheduler, dispatcher: dispatcher, recovery: recovery, clock: clock, logger: logger)
        let eventRelay = configuration.databaseURL == nil ? nil : ClusterEventRelay(store: store, hub: hub, clock: clock, logger: logger)
        self.eventRelay = eventRelay
        var http = HTTPServerConfiguration()
        http.host = configuration.listenHost
        http.port = configuration.listenPort
        http.inheritedListeners = configuration.inheritedListeners
        http.maxBodyBytes = configuration.maxRequestBody
        http.maxBodyBytesByPath = ["/downloads/batch": max(configuration.maxRequestBody, DownloadsAPI.maxBatchBodyBytes)]
        http.maxConnections = configuration.maxConnections
        let downloads = DownloadsAPI(store: store, scheduler: scheduler, dispatcher: dispatcher, hub: hub, events: events,
                                     files: files, sources: sources, configuration: configuration, clock: clock, ids: ids,
                                     inserts: InsertBatcher(store: store, regather: configuration.databaseURL == nil ? nil : .milliseconds(2)),
                                     writes: WriteQueue())
        let sessions = SessionsAPI(store: store, scheduler: scheduler, dispatcher: dispatcher, hub: hub, events: events,
                                   partials: partials, clock: clock, writes: WriteQueue())
        let watches = WatchesAPI(downloads: downloads, writes: WriteQueue())
        let jobEvents = EventsAPI(store: store, hub: hub, present: { downloads.encodeForEvent($0) },
                                  liveBytes: { scheduler.liveBytes(of: $0) })
        server = HTTPServer(configuration: http, router: Self.router(
            downloads: downloads, sessions: sessions, watches: watches, events: jobEvents,
            globalEvents: GlobalEventsAPI(store: store, scheduler: scheduler, elsewhere: eventRelay?.elsewhere),
            status: StatusAPI(store: store, scheduler: scheduler, metrics: metrics, clock: clock), authenticator: authenticator,
            metrics: metrics, logger: logger, console: ConsoleAPI(),
            nodes: NodesAPI(store: store, scheduler: scheduler, name: configuration.nodeName, startedAt: clock.now(), clock: clock),
            hosts: HostCheck(allowedHosts: configuration.allowedHosts, loopbackListener: configuration.isLoopbackListener,
                             tokensSet: { [authenticator] in authenticator.isEnabled })), logger: logger)
        if configuration.webhookSecrets.isEmpty {
            logger.warning("no FETCHD_WEBHOOK_SECRET: webhooks are sent unsigned")
        }
    }

    /// The object storage's client, sending its requests through the transfer engine.
    static func objectStorageClient(_ storage: ObjectStorageConfiguration, engine: TransferEngine) -> ObjectStorageClient {
        ObjectStorageClient(settings: storage.settings) { request, done in
            _ = engine.start(request, onProgress: { _ in }, onComplete: done)
        }
    }

    /// A finished download is hard-linked from the staging directory into the download root; across
    /// file systems — or across two mounts of one, as two container volumes are — that fails, so it
    /// is tried once at start rather than found out at the first completion. The probe's name is
    /// random too: nodes sharing the directories may have one pid (each is pid 1 in its container).
    static func checkSameFileSystem(_ configuration: Configuration) throws {
        let probe = "/" + DestinationPath.reservedPrefix + "link-check-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let staged = configuration.partialDirectory + probe
        let placed = configuration.downloadRoot + probe
        let fd = open(staged, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Configuration.Invalid(description: describeErrno("cannot write in the staging directory FETCHD_STAGING_DIR (--staging-dir) \(configuration.partialDirectory)")) }
        close(fd)
        defer {
            unlink(staged)
            unlink(placed)
        }
        unlink(placed)
        guard link(staged, placed) == 0 else {
            throw Configuration.Invalid(description: errno == EXDEV
                ? "the staging directory \(configuration.partialDirectory) and FETCHD_DOWNLOAD_ROOT \(configuration.downloadRoot) are not on one file system mount, so downloads cannot be moved into place atomically: set FETCHD_STAGING_DIR (--staging-dir) to a directory under the download root, e.g. \(configuration.downloadRoot)/.fetchd-partial"
                : describeErrno("cannot link from the staging directory \(configuration.partialDirectory) into FETCHD_DOWNLOAD_ROOT (--download-root) \(configuration.downloadRoot)"))
        }
    }

    /// Recovers interrupted work, starts scheduling and delivery, and listens. Returns the bound port.
    public func start() throws -> Int {
        try recovery.run(now: clock.now())
        scheduler.poke()
        dispatcher.poke()
        housekeeper.start()
        watchKeeper.start()
        bandwidth.start()
        uploadBandwidth.start()
        heartbeat?.start()
        eventRelay?.start()
        return try server.start()
    }

    /// Stops accepting, stops transfers keeping their partial data, finishes in-flight responses.
    /// Transfers and in-flight requests are drained side by side, so the whole drain fits in one
    /// `FETCHD_SHUTDOWN_TIMEOUT`.
    public func shutdown() async {
        let timeout = configuration.shutdownTimeout
        dispatcher.stop()
        heartbeat?.stop()
        eventRelay?.stop()
        housekeeper.stop()
        watchKeeper.stop()
        bandwidth.stop()
        uploadBandwidth.stop()
        async let transfersStopped: Void = scheduler.shutdown(timeout: timeout)
        async let requestsDrained: Void = server.shutdown(timeout: timeout.inSeconds)
        _ = await (transfersStopped, requestsDrained)
        engine.shutdown()
        store.close()
    }

    /// Re-reads the tokens file (SIGHUP).
    public func reloadTokens() throws {
        try authenticator.reload()
    }

    /// One route per endpoint, each with the one function that handles it (README, Architecture).
    static func router(downloads: DownloadsAPI, sessions: SessionsAPI, watches: WatchesAPI, events: EventsAPI, globalEvents: GlobalEventsAPI,
                       status: StatusAPI, authenticator: Authenticator, metrics: Metrics, logger: Logger,
                       console: ConsoleAPI, nodes: NodesAPI, hosts: HostCheck) -> Router {
        var router = Router()
        /// Registers a route whose requests are logged, counted and timed under its pattern; `open`
        /// routes need no token; a foreign `Host` is refused before either (HostCheck). What a
        /// handler throws becomes its response here, and only here.
        func route(_ method: String, _ pattern: String, open: Bool = false,
                   _ handler: @escaping @Sendable (HTTPRequest, PathParameters, _ principal: String) async throws -> HTTPResponse) {
            // Built once per route; only the status varies per request.
            let requestLabels = Metrics.labels(["route": pattern, "method": method])
            let durationLabels = Metrics.labels(["route": pattern])
            router.add(method, pattern) { request, parameters in
                let started = ContinuousClock.now
                let response: HTTPResponse
                if let refusal = hosts.refusal(for: request) {
                    response = refusal
                } else if let principal = open ? "anonymous" : authenticator.principal(for: request) {
                    do {
                        response = try await handler(request, parameters, principal)
                    } catch {
                        response = APIProblem.response(for: error, logger: logger)
                    }
                } else {
                    response = Authenticator.unauthorized()
                }
                let seconds = started.duration(to: .now).inSeconds
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
        route("POST", "/downloads") { request, _, principal in try await downloads.create(request, principal: principal) }
        route("POST", "/downloads/batch") { request, _, principal in try await downloads.createBatch(request, principal: principal) }
        route("GET", "/downloads") { request, _, _ in try downloads.list(request) }
        route("GET", "/downloads/{id}") { _, p, _ in try downloads.get(p["id"] ?? "") }
        route("DELETE", "/downloads/{id}") { _, p, _ in try await downloads.cancel(p["id"] ?? "") }
        route("POST", "/downloads/{id}/pause") { _, p, _ in try await downloads.pause(p["id"] ?? "") }
        route("POST", "/downloads/{id}/resume") { _, p, _ in try await downloads.resume(p["id"] ?? "") }
        route("PATCH", "/downloads/{id}") { request, p, _ in try await downloads.patch(p["id"] ?? "", request) }
        route("POST", "/downloads/{id}/retry") { _, p, _ in try await downloads.retry(p["id"] ?? "") }
        route("GET", "/downloads/{id}/attempts") { _, p, _ in try downloads.attempts(p["id"] ?? "") }
        route("GET", "/downloads/{id}/events") { request, p, _ in
            try events.stream(p["id"] ?? "", lastEventID: request.headers["Last-Event-ID"])
        }
        route("POST", "/uploads") { request, _, principal in try await downloads.createUpload(request, principal: principal) }
        route("GET", "/uploads") { request, _, _ in try downloads.list(request, kind: .upload) }
        // A job's reads, changes, transitions and history are one code for both kinds; each kind
        // is found under its own path only.
        route("GET", "/uploads/{id}") { _, p, _ in try downloads.get(p["id"] ?? "", kind: .upload) }
        route("DELETE", "/uploads/{id}") { _, p, _ in try await downloads.cancel(p["id"] ?? "", kind: .upload) }
        route("POST", "/uploads/{id}/pause") { _, p, _ in try await downloads.pause(p["id"] ?? "", kind: .upload) }
        route("POST", "/uploads/{id}/resume") { _, p, _ in try await downloads.resume(p["id"] ?? "", kind: .upload) }
        route("PATCH", "/uploads/{id}") { request, p, _ in try await downloads.patch(p["id"] ?? "", request, kind: .upload) }
        route("POST", "/uploads/{id}/retry") { _, p, _ in try await downloads.retry(p["id"] ?? "", kind: .upload) }
        route("GET", "/uploads/{id}/attempts") { _, p, _ in try downloads.attempts(p["id"] ?? "", kind: .upload) }
        route("GET", "/uploads/{id}/events") { request, p, _ in
            try events.stream(p["id"] ?? "", lastEventID: request.headers["Last-Event-ID"], kind: .upload)
        }
        route("POST", "/watches") { request, _, principal in try await watches.create(request, principal: principal) }
        route("GET", "/watches") { request, _, _ in try watches.list(request) }
        route("GET", "/watches/{id}") { _, p, _ in try watches.get(p["id"] ?? "") }
        route("PATCH", "/watches/{id}") { request, p, _ in try await watches.patch(p["id"] ?? "", request) }
        route("DELETE", "/watches/{id}") { _, p, _ in try await watches.delete(p["id"] ?? "") }
        route("POST", "/watches/{id}/check") { _, p, _ in try await watches.checkNow(p["id"] ?? "") }
        route("POST", "/watches/{id}/pause") { _, p, _ in try await watches.pause(p["id"] ?? "") }
        route("POST", "/watches/{id}/resume") { _, p, _ in try await watches.resume(p["id"] ?? "") }
        route("GET", "/events") { request, _, _ in try globalEvents.stream(request) }
        route("GET", "/sessions/{session}") { _, p, _ in try status.session(p["session"] ?? "") }
        for action in SessionActionKind.allCases {
            route("POST", "/sessions/{session}/\(action.rawValue)") { request, p, _ in
                try await sessions.act(action, session: p["session"] ?? "", request)
            }
        }
        route("GET", "/metrics") { _, _, _ in try status.prometheus() }
        route("GET", "/nodes") { _, _, _ in try nodes.list() }
        route("GET", "/healthz", open: true) { _, _, _ in status.health() }
        route("GET", "/readyz", open: true) { _, _, _ in status.readiness() }
        route("GET", "/ui", open: true) { _, _, _ in ConsoleAPI.redirectToSlash() }
        route("GET", "/ui/", open: true) { request, _, _ in try console.serve("", request) }
        route("GET", "/ui/{file}", open: true) { request, p, _ in try console.serve(p["file"] ?? "", request) }
        return router
    }
}
