@testable import DownloadService
import Testing

/// Progress events, through this node's transfers or relayed from another node's saved counts:
/// one per job at most every second, only when its bytes moved, each with the job's newest count.
@Suite struct ProgressThrottleTests {
    let start = ContinuousClock.now

    func at(_ milliseconds: Int) -> ContinuousClock.Instant {
        start.advanced(by: .milliseconds(milliseconds))
    }

    func running(_ bytes: [String: Int64], session: String = "default") -> [String: LiveProgress] {
        bytes.mapValues { LiveProgress(session: session, bytesReceived: $0, bytesExpected: 10_000) }
    }

    @Test func aJobIsReportedAtOnceThenOnlyWhenItsBytesMovedAndASecondPassed() {
        var throttle = ProgressThrottle(interval: .seconds(1))
        #expect(throttle.due(running(["a": 10]), now: at(0)).map(\.id) == ["a"])
        #expect(throttle.due(running(["a": 20]), now: at(400)).isEmpty, "too soon")
        #expect(throttle.due(running(["a": 20]), now: at(1000)) == [
            ProgressThrottle.Due(id: "a", progress: running(["a": 20])["a"]!, previous: .init(bytes: 10, at: at(0))),
        ])
        #expect(throttle.due(running(["a": 20]), now: at(3000)).isEmpty, "no bytes moved")
        let moved = throttle.due(running(["a": 30]), now: at(3200))
        #expect(moved.map(\.progress.bytesReceived) == [30])
        #expect(moved.first?.previous?.at == at(1000))
    }

    @Test func eachJobIsPacedOnItsOwn() {
        var throttle = ProgressThrottle(interval: .seconds(1))
        _ = throttle.due(running(["a": 1]), now: at(0))
        #expect(throttle.due(running(["a": 2, "b": 1]), now: at(600)).map(\.id) == ["b"])
        #expect(throttle.due(running(["a": 3, "b": 2]), now: at(1000)).map(\.id) == ["a"])
        #expect(throttle.due(running(["a": 3, "b": 3]), now: at(1600)).map(\.id) == ["b"])
    }

    /// A job that stopped and runs again (here or on another node) starts over as a new one.
    @Test func aJobNoLongerRunningIsForgotten() {
        var throttle = ProgressThrottle(interval: .seconds(1))
        _ = throttle.due(running(["a": 5]), now: at(0))
        #expect(throttle.due([:], now: at(100)).isEmpty)
        let again = throttle.due(running(["a": 5]), now: at(200))
        #expect(again.map(\.id) == ["a"] && again.first?.previous == nil)
    }

    @Test func globalFramesShowTheSessionsJobsWithTheirRate() throws {
        var frames = ProgressFrames(session: "s")
        var live = running(["a": 0], session: "s").merging(running(["b": 0], session: "other")) { $1 }
        _ = frames.frames(live, now: at(0))
        live["a"]?.bytesReceived = 2000
        live["b"]?.bytesReceived = 2000
        let text = String(decoding: frames.frames(live, now: at(2000)), as: UTF8.self)
        #expect(text == "event: progress\ndata: {\"id\":\"a\",\"kind\":\"download\",\"bytesReceived\":2000,\"bytesExpected\":10000,\"bytesPerSecond\":1000}\n\n")
    }
}

/// `GET /events` on one node shows what another saved only while a stream follows it here.
@Suite struct RemoteProgressTests {
    @Test func progressIsKeptOnlyWhileAStreamFollows() {
        let elsewhere = RemoteProgress()
        let progress = ["a": LiveProgress(session: "default", bytesReceived: 7, bytesExpected: nil)]
        elsewhere.replace(with: progress)
        #expect(!elsewhere.isFollowed && elsewhere.current.isEmpty, "read for nobody")
        elsewhere.follow()
        elsewhere.follow()
        elsewhere.replace(with: progress)
        elsewhere.unfollow()
        #expect(elsewhere.isFollowed && elsewhere.current == progress)
        elsewhere.unfollow()
        #expect(!elsewhere.isFollowed && elsewhere.current.isEmpty, "the next stream starts from nothing stale")
    }
}
