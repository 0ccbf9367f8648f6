import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
import Transfer

/// How webhook delivery attempts count (`DeliveryPolicy`), and the dispatcher recording them.
@Suite struct WebhookDeliveryTests {
    static let schedule: [Duration] = [.zero, .seconds(5), .seconds(300)]
    let policy = DeliveryPolicy(schedule: schedule)
    let now: Int64 = 1_000_000

    func delivery(attemptsMade: Int) -> WebhookDelivery {
        WebhookDelivery(eventID: "msg_1", url: "http://hooks.example/a", type: "download.completed", payload: [], attempts: attemptsMade)
    }

    func answer(_ status: Int, retryAfter: Double? = nil, attemptsMade: Int = 0, jitter: Double = 0) -> DeliveryAttempt {
        policy.outcome(of: delivery(attemptsMade: attemptsMade), result: TransferResult(httpStatus: status, retryAfter: retryAfter),
                       now: now, jitter: jitter)
    }

    @Test(arguments: [200, 202, 204, 299]) func anySuccessIsDelivered(status: Int) {
        let attempt = answer(status)
        #expect(attempt.delivered)
        #expect(attempt.retryAt == nil)
        #expect(attempt.status == status)
    }

    /// The next delay is the schedule's entry for the attempt that follows, stretched by up to 10 % of jitter.
    @Test(arguments: [0.0, 0.5, 0.999]) func aServerErrorIsRetriedOnSchedule(jitter: Double) throws {
        let first = try #require(answer(500, jitter: jitter).retryAt)
        #expect((now + 5_000)...(now + 5_500) ~= first)
        let second = try #require(answer(500, attemptsMade: 1, jitter: jitter).retryAt)
        #expect((now + 300_000)...(now + 330_000) ~= second)
        #expect(answer(500, jitter: jitter).error == "answered 500")
    }

    @Test func retryAfterIsHonouredUpToADay() {
        #expect(answer(503, retryAfter: 3600).retryAt == now + 3_600_000)
        #expect(answer(503, retryAfter: 2).retryAt == now + 5_000)  // never sooner than the schedule
        #expect(answer(429, retryAfter: 30 * 86400).retryAt == now + 86_400_000)
    }

    @Test func goneStopsTheDelivery() {
        let attempt = answer(410)
        #expect(!attempt.delivered)
        #expect(attempt.retryAt == nil)
        #expect(attempt.status == 410)
    }

    @Test func aBlockedAddressStopsTheDelivery() {
        let attempt = policy.outcome(of: delivery(attemptsMade: 0), result: TransferResult(failure: .blockedAddress("10.0.0.1")),
                                     now: now, jitter: 0)
        #expect(!attempt.delivered)
        #expect(attempt.retryAt == nil)
    }

    @Test func aNetworkFailureIsRetried() {
        let attempt = policy.outcome(of: delivery(attemptsMade: 0), result: TransferResult(failure: .network("connection refused")),
                                     now: now, jitter: 0)
        #expect(attempt.retryAt == now + 5_000)
        #expect(attempt.status == nil)
    }

    @Test func anExhaustedScheduleGivesUp() {
        let last = answer(500, attemptsMade: Self.schedule.count - 1)
        #expect(!last.delivered)
        #expect(last.retryAt == nil)
    }

    /// Records `download.cancelled` and `session.finished` for the global subscriber, as a client's cancel does.
    func cancelTheSessionsOnlyJob(_ fixture: ServiceFixture) throws {
        var job = try fixture.submit("j1")
        job.state = .cancelled
        job.finishedAt = fixture.clock.now
        let now = fixture.clock.now
        #expect(try fixture.store.update(job, expecting: [.queued], events: [fixture.events.terminal(job, now: now)],
                                         sessionFinished: { [fixture.events.sessionFinished($0, now: now)] }))
    }

    func dispatcher(_ store: any JobStore, _ sender: FakeWebhookSender, _ fixture: ServiceFixture) -> WebhookDispatcher {
        WebhookDispatcher(store: store, sender: sender, policy: policy, metrics: fixture.metrics, clock: fixture.clock.clock,
                          logger: ServiceFixture.quiet)
    }

    /// A delivery answered 500 is kept for the schedule's next time, sent again then, and settled
    /// by a 2xx; the session's `session.finished` waits for it and follows.
    @Test func theDispatcherRecordsARetryThenTheDelivery() async throws {
        let fixture = try ServiceFixture()
        try cancelTheSessionsOnlyJob(fixture)
        let now = fixture.clock.now
        let sender = FakeWebhookSender()
        let dispatcher = dispatcher(fixture.store, sender, fixture)
        defer { dispatcher.stop() }

        dispatcher.poke()
        #expect(await eventually { sender.all.count == 1 })
        let first = try #require(sender.all.first)
        #expect(first.delivery.type == "download.cancelled")
        #expect(first.delivery.url == ServiceFixture.webhookURL)
        #expect(first.timestamp == now / 1000)
        first.answer(TransferResult(httpStatus: 500))

        #expect(try await eventually { try fixture.store.nextDeliveryAt(after: now) != nil })
        let retryAt = try #require(try fixture.store.nextDeliveryAt(after: now))
        #expect((now + 5_000)...(now + 5_500) ~= retryAt)
        #expect(try fixture.store.dueDeliveries(now: now, limit: 10, excluding: []).isEmpty)  // session.finished waits its turn
        #expect(sender.all.count == 1)

        fixture.clock.advance(by: .milliseconds(retryAt - now))
        dispatcher.poke()
        #expect(await eventually { sender.all.count == 2 })
        #expect(sender.all[1].delivery.eventID == first.delivery.eventID)
        #expect(sender.all[1].delivery.attempts == 1)
        sender.all[1].answer(TransferResult(httpStatus: 204))

        #expect(await eventually { sender.all.count == 3 })
        #expect(sender.all[2].delivery.type == "session.finished")
        sender.all[2].answer(TransferResult(httpStatus: 200))

        #expect(try await eventually { try fixture.store.webhookBacklog().pending == 0 })
        let metrics = fixture.metrics.render(help: [:], bounds: [:])
        #expect(metrics.contains("fetchd_webhook_deliveries_total{outcome=\"retry\"} 1\n"))
        #expect(metrics.contains("fetchd_webhook_deliveries_total{outcome=\"delivered\"} 2\n"))
        #expect(sender.all.count == 3)
    }

    /// An answer that cannot be recorded (the database cannot be written) is not sent again while
    /// the store fails: it is recorded once the store takes writes again.
    @Test func anAnswerNotRecordedIsRecordedLaterNotSentAgain() async throws {
        let fixture = try ServiceFixture()
        try cancelTheSessionsOnlyJob(fixture)
        let store = FailingWrites(fixture.store)
        let sender = FakeWebhookSender()
        let dispatcher = dispatcher(store, sender, fixture)
        defer { dispatcher.stop() }

        dispatcher.poke()
        #expect(await eventually { sender.all.count == 1 })
        sender.all[0].answer(TransferResult(httpStatus: 200))
        #expect(await eventually { store.failures.load(ordering: .sequentiallyConsistent) > 0 })
        dispatcher.queue.sync {}  // the turn whose recording failed is over
        #expect(sender.all.count == 1)

        store.recordingFails.store(false, ordering: .sequentiallyConsistent)
        #expect(await eventually { sender.all.count == 2 })
        #expect(sender.all.map(\.delivery.type) == ["download.cancelled", "session.finished"])
        #expect(try fixture.store.webhookBacklog().pending == 1)  // session.finished, not answered yet
    }
}
