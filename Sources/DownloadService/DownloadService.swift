import DownloadCore
import Foundation
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
        lock = try DataDirectoryLock(directory: configuration.dataDirectory)
        authenticator = try Authenticator(tokens: configuration.apiTokens, tokensFile: configuration.apiTokensFile)
        store = try Store(path: configuration.databasePath)
        engine = TransferEngine(logger: logger)
        events = WebhookEvents(globalURL: configuration.webhookURL)
        let dispatcher = WebhookDispatcher(store: store, engine: engine, configuration: configuration, clock: clock, logger: logger)
        self.dispatcher = dispatcher
        housekeeper = Housekeeper(store: store, retention: configuration.retention, clock: clock, logger: logger)
        let hub = EventHub(clock: clock)
        scheduler = Scheduler(store: store, engine: engine, configuration: configuration, events: events, hub: hub,
                              clock: clock, logger: logger, onEventsRecorded: { dispatcher.poke() })
        var http = HTTPServerConfiguration()
        http.host = configuration.listenHost
        http.port = configuration.listenPort
        http.maxBodyBytes = configuration.maxRequestBody
        http.maxConnections = configuration.maxConnections
        let downloads = DownloadsAPI(store: store, scheduler: scheduler, dispatcher: dispatcher, hub: hub, events: events,
                                     files: scheduler.files, configuration: configuration, clock: clock, ids: IDSource())
        server = HTTPServer(configuration: http, router: Self.router(
            downloads: downloads, events: EventsAPI(store: store, hub: hub, present: { downloads.encode($0) }),
            status: StatusAPI(store: store, scheduler: scheduler), authenticator: authenticator), logger: logger)
        if configuration.webhookSecrets.isEmpty {
            logger.warning("no FETCHD_WEBHOOK_SECRET: webhooks are sent unsigned")
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
    public func shutdown() async {
        let deadline = configuration.shutdownTimeout
        await scheduler.shutdown(timeout: deadline)
        dispatcher.stop()
        housekeeper.stop()
        await server.shutdown(timeout: deadline)
        engine.shutdown()
        store.close()
    }

    /// Re-reads the tokens file (SIGHUP).
    public func reloadTokens() throws {
        try authenticator.reload()
    }

    static func router(downloads: DownloadsAPI, events: EventsAPI, status: StatusAPI, authenticator: Authenticator) -> Router {
        var router = Router()
        func guarded(_ handler: @escaping @Sendable (HTTPRequest, PathParameters, String) -> HTTPResponse) -> HTTPHandler {
            { request, parameters in
                guard let principal = authenticator.principal(for: request) else { return Authenticator.unauthorized() }
                return handler(request, parameters, principal)
            }
        }
        router.add("POST", "/downloads", guarded { request, _, principal in downloads.create(request, principal: principal) })
        router.add("GET", "/downloads", guarded { request, _, _ in downloads.list(request) })
        router.add("GET", "/downloads/{id}", guarded { _, p, _ in downloads.get(p["id"] ?? "") })
        router.add("DELETE", "/downloads/{id}", guarded { _, p, _ in downloads.cancel(p["id"] ?? "") })
        router.add("POST", "/downloads/{id}/pause", guarded { _, p, _ in downloads.pause(p["id"] ?? "") })
        router.add("POST", "/downloads/{id}/resume", guarded { _, p, _ in downloads.resume(p["id"] ?? "") })
        router.add("GET", "/downloads/{id}/attempts", guarded { _, p, _ in downloads.attempts(p["id"] ?? "") })
        router.add("GET", "/downloads/{id}/events", guarded { request, p, _ in
            events.stream(p["id"] ?? "", lastEventID: request.headers["Last-Event-ID"])
        })
        router.add("GET", "/sessions/{session}", guarded { _, p, _ in status.session(p["session"] ?? "") })
        router.add("GET", "/metrics", guarded { _, _, _ in status.metrics() })
        router.add("GET", "/healthz") { _, _ in status.health() }
        router.add("GET", "/readyz") { _, _ in status.readiness() }
        return router
    }
}
