@testable import DownloadService
import Foundation
import HTTPServer
import Testing

/// The API in-process: the router `DownloadService` builds, with its handlers wired as the
/// service wires them, over a fixture's store, a scheduler that starts its attempts on
/// `FakeTransfers`, and webhook delivery to a sender that never answers. Requests go straight
/// to `Router.handle`, without sockets.
final class ServiceAPI: Sendable {
    let fixture: ServiceFixture
    let transfers: FakeTransfers
    let scheduler: Scheduler
    let router: Router
    private let dispatcher: WebhookDispatcher

    /// `settings`: flag names and values, as for the service.
    init(_ settings: [String: String] = [:]) throws {
        let (fixture, transfers) = (try ServiceFixture(), FakeTransfers())
        try FileManager.default.createDirectory(atPath: fixture.directory + "/uploads", withIntermediateDirectories: true)
        let configuration = try fixture.configuration(settings)
        let hub = EventHub(clock: fixture.clock.clock)
        let scheduler = try fixture.scheduler(settings, transfers: transfers, hub: hub)
        let (store, clock, logger) = (fixture.store, fixture.clock.clock, ServiceFixture.quiet)
        let dispatcher = WebhookDispatcher(store: store, sender: FakeWebhookSender(),
                                           policy: DeliveryPolicy(schedule: configuration.webhookRetrySchedule),
                                           metrics: fixture.metrics, clock: clock, logger: logger)
        let downloads = DownloadsAPI(store: store, scheduler: scheduler, dispatcher: dispatcher, hub: hub, events: fixture.events,
                                     files: fixture.files, sources: UploadSources(root: fixture.directory + "/uploads"),
                                     configuration: configuration, clock: clock, ids: IDSource(),
                                     inserts: InsertBatcher(store: store), writes: WriteQueue())
        let sessions = SessionsAPI(store: store, scheduler: scheduler, dispatcher: dispatcher, hub: hub, events: fixture.events,
                                   partials: fixture.partials, clock: clock, writes: WriteQueue())
        let watches = WatchesAPI(downloads: downloads, writes: WriteQueue())
        router = DownloadService.router(
            downloads: downloads, sessions: sessions, watches: watches,
            events: EventsAPI(store: store, hub: hub, present: { downloads.encodeForEvent($0) },
                              liveBytes: { scheduler.liveBytes(of: $0) }),
            globalEvents: GlobalEventsAPI(store: store, scheduler: scheduler, elsewhere: nil),
            status: StatusAPI(store: store, scheduler: scheduler, metrics: fixture.metrics, clock: clock),
            authenticator: try Authenticator(tokens: [], tokensFile: nil), metrics: fixture.metrics, logger: logger,
            console: ConsoleAPI(),
            nodes: NodesAPI(store: store, scheduler: scheduler, name: "test", startedAt: clock.now(), clock: clock),
            hosts: HostCheck(allowedHosts: [], loopbackListener: true, tokensSet: { false }))
        self.fixture = fixture
        self.transfers = transfers
        self.scheduler = scheduler
        self.dispatcher = dispatcher
    }

    /// Runs `body` with a fresh API, then stops its transfers and webhook delivery, thrown or not.
    /// A body whose only `try` is inside `#expect` says `async throws` itself: a closure's effects
    /// are inferred from its text before macros expand.
    static func run(_ settings: [String: String] = [:], _ body: (ServiceAPI) async throws -> Void) async throws {
        let api = try ServiceAPI(settings)
        do {
            try await body(api)
        } catch {
            await api.stop()
            throw error
        }
        await api.stop()
    }

    func stop() async {
        await scheduler.shutdown(timeout: .seconds(5))
        dispatcher.stop()
    }

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        await router.handle(request)
    }
}
