import DownloadCore
import Testing

extension API {
    /// `GET /sessions/{s}` and the actions on a whole session: each acts on the session's jobs where
    /// it applies (`?state=` narrows), leaves other sessions alone, and says how many it matched and changed.
    @Suite struct SessionTests {
        /// One job of session `s` in each of `states` (named after the state), and one of session `other` queued.
        private func jobs(_ api: ServiceAPI, _ states: [DownloadState]) async throws -> [DownloadState: String] {
            var ids: [DownloadState: String] = [:]
            for state in states { ids[state] = try await api.job(state.rawValue, in: state, session: "s") }
            _ = try await api.job("elsewhere", in: .queued, session: "other")
            return ids
        }

        private func counts(_ api: ServiceAPI, _ session: String) async throws -> JSONValue {
            let reply = await api.get("/sessions/\(session)")
            #expect(reply.status == 200)
            return try reply.json()
        }

        private func states(_ api: ServiceAPI, _ ids: [DownloadState: String]) async -> [DownloadState: String] {
            var now: [DownloadState: String] = [:]
            for (state, id) in ids { now[state] = await api.state(id) }
            return now
        }

        @Test func aSessionCountsItsJobsInEveryState() async throws {
            try await ServiceAPI.run { api in
                _ = try await jobs(api, [.queued, .paused, .cancelled, .failed])
                let session = try await counts(api, "s")
                #expect(session["session"]?.string == "s")
                #expect(session["counts"] == .object([
                    "queued": .integer(1), "running": .integer(0), "paused": .integer(1),
                    "completed": .integer(0), "failed": .integer(1), "cancelled": .integer(1),
                ]))
                #expect(session["finished"] == .bool(false))
            }
        }

        @Test func aSessionIsFinishedWhenItHasJobsAndNoneIsLive() async throws {
            try await ServiceAPI.run { api in
                let unknown = try await counts(api, "nobody")
                #expect(unknown["counts"]?["queued"]?.integer == 0)
                #expect(unknown["finished"] == .bool(false))
                _ = try await jobs(api, [.completed, .cancelled])
                #expect(try await counts(api, "s")["finished"] == .bool(true))
                #expect(try await counts(api, "other")["finished"] == .bool(false))
            }
        }

        @Test func pauseStopsQueuedAndRunningJobs() async throws {
            try await ServiceAPI.run { api in
                let ids = try await jobs(api, [.queued, .running, .completed])
                let reply = try await api.post("/sessions/s/pause").json()
                #expect(reply == .object(["session": .string("s"), "matched": .integer(3), "changed": .integer(2)]))
                #expect(await states(api, ids) == [.queued: "paused", .running: "paused", .completed: "completed"])
                #expect(try await counts(api, "other")["counts"]?["queued"]?.integer == 1)
            }
        }

        @Test func resumeQueuesPausedJobs() async throws {
            try await ServiceAPI.run { api in
                let ids = try await jobs(api, [.paused, .failed])
                #expect(try await api.post("/sessions/s/resume").json()["changed"]?.integer == 1)
                #expect(await api.state(ids[.paused]!) == "queued")  // not due yet
                #expect(await api.state(ids[.failed]!) == "failed")
            }
        }

        @Test func cancelEndsEveryLiveJob() async throws {
            try await ServiceAPI.run { api in
                let ids = try await jobs(api, [.queued, .running, .paused, .completed])
                #expect(try await api.post("/sessions/s/cancel").json()["changed"]?.integer == 3)
                #expect(await states(api, ids) == [
                    .queued: "cancelled", .running: "cancelled", .paused: "cancelled", .completed: "completed",
                ])
                #expect(try await counts(api, "s")["finished"] == .bool(true))
            }
        }

        @Test func retryQueuesFailedJobs() async throws {
            try await ServiceAPI.run { api in
                let ids = try await jobs(api, [.failed, .cancelled])
                #expect(try await api.post("/sessions/s/retry").json()["changed"]?.integer == 1)
                #expect(await ["queued", "running"].contains(api.state(ids[.failed]!)))
                #expect(await api.state(ids[.cancelled]!) == "cancelled")
            }
        }

        @Test func stateNarrowsTheAction() async throws {
            try await ServiceAPI.run { api in
                let ids = try await jobs(api, [.queued, .running])
                let reply = try await api.post("/sessions/s/pause?state=queued").json()
                #expect(reply["matched"]?.integer == 1)
                #expect(reply["changed"]?.integer == 1)
                #expect(await states(api, ids) == [.queued: "paused", .running: "running"])
            }
        }

        @Test(arguments: [("/sessions/two%20words/pause", "session"), ("/sessions/s/cancel?state=done", "state"),
                          ("/sessions/" + String(repeating: "s", count: 129) + "/retry", "session")])
        func aBadSessionOrStateIs400(target: String, field: String) async throws {
            try await ServiceAPI.run { api async throws in
                #expect(try await api.post(target).problem(400).fields == [field])
            }
        }

        @Test func aBadSessionNameToReadIs400() async throws {
            try await ServiceAPI.run { api async throws in
                #expect(try await api.get("/sessions/a%2Fb").problem(400).fields == ["session"])
            }
        }
    }
}
