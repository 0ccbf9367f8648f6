@testable import DownloadService
import DownloadCore
import Testing
import TestSupport
import Transfer

extension API {
    /// `GET /events`: every job's state changes from the event log, with its global sequence as
    /// `id:`; `Last-Event-ID` replays what came after it, and an id the log cannot continue from
    /// starts the stream with `event: reset`.
    @Suite struct GlobalEventsTests {
        private func open(_ api: ServiceAPI, _ query: String = "", lastEventID: String? = nil) async throws -> EventStream {
            let reply = await api.get("/events" + query, headers: lastEventID.map { [("Last-Event-ID", $0)] } ?? [])
            #expect(reply.status == 200)
            #expect(reply.headers["Content-Type"] == "text/event-stream")
            return try EventStream(reply)
        }

        /// The job id and state of each state event.
        private func states(_ frames: [EventStream.Frame]) throws -> [String] {
            try frames.filter { $0.event == "state" }.map { frame in
                let job = try frame.json()
                return "\(job?["id"]?.string ?? "?") \(job?["state"]?.string ?? "?")"
            }
        }

        @Test func theStreamFollowsStateChangesFromNowOn() async throws {
            try await ServiceAPI.run { api in
                let before = try await api.create("a", ServiceAPI.notYet)
                let stream = try await open(api)
                let later = try await api.create("b", ServiceAPI.notYet)
                #expect(await api.post("/downloads/\(before)/pause").status == 200)
                let events = await stream.waitForEvents(2)
                #expect(stream.frames.first?["retry"] == "2000")
                #expect(try states(events) == ["\(later) queued", "\(before) paused"])
                let sequence = events.compactMap { $0.id.flatMap { Int64($0) } }
                #expect(sequence.count == 2 && sequence[0] < sequence[1])
            }
        }

        @Test func lastEventIDReplaysTheStateEventsAfterIt() async throws {
            try await ServiceAPI.run { api in
                let a = try await api.create("a", ServiceAPI.notYet)
                let b = try await api.create("b", ServiceAPI.notYet)
                #expect(await api.delete(a).status == 200)
                let all = try await open(api, lastEventID: "0")
                let logged = await all.waitForEvents(3)
                #expect(try states(logged) == ["\(a) queued", "\(b) queued", "\(a) cancelled"])

                let firstID = try #require(logged.first?.id)
                let rest = try await open(api, lastEventID: firstID)
                let replayed = await rest.waitForEvents(2)
                #expect(replayed.map(\.id) == logged.dropFirst().map(\.id))
                #expect(replayed.allSatisfy { $0.event == "state" })
            }
        }

        @Test(arguments: ["999999", "abc", "-1", ""])
        func anIDTheLogCannotContinueFromStartsWithReset(lastEventID: String) async throws {
            try await ServiceAPI.run { api in
                let a = try await api.create("a", ServiceAPI.notYet)
                let stream = try await open(api, lastEventID: lastEventID)
                let reset = try #require(await stream.waitForEvents(1).first)
                #expect(reset.event == "reset")
                #expect(try reset.json() == .object([:]))
                let newest = try #require(reset.id)
                // Then it follows from the newest event, which the client reads by listing.
                #expect(await api.delete(a).status == 200)
                let next = await stream.waitForEvents(2)
                #expect(try states(next) == ["\(a) cancelled"])
                #expect(Int64(next[1].id ?? "") == Int64(newest)! + 1)
            }
        }

        @Test func sessionNarrowsTheStream() async throws {
            try await ServiceAPI.run { api in
                let stream = try await open(api, "?session=mine", lastEventID: "0")
                _ = try await api.job("theirs", in: .queued, session: "theirs")
                let mine = try await api.job("mine", in: .queued, session: "mine")
                let events = await stream.waitForEvents(1)
                #expect(try states(events) == ["\(mine) queued"])
                try await api.get("/events?session=not%20a%20session").problem(400)
            }
        }

        @Test func progressOfRunningJobsComesWithoutAnID() async throws {
            try await ServiceAPI.run { api in
                let id = try await api.job("a", in: .running)
                api.transfers.progress("a", TransferProgress(bytesOnDisk: 512, bytesExpected: 2048))
                #expect(await eventually { api.scheduler.liveProgress()[id]?.bytesReceived == 512 })
                let stream = try await open(api)
                #expect(await eventually { stream.frames.contains { $0.event == "progress" } })
                let progress = try #require(stream.frames.first { $0.event == "progress" })
                #expect(progress.id == nil)
                #expect(try progress.json() == .object([
                    "id": .string(id), "kind": .string("download"), "bytesReceived": .integer(512), "bytesExpected": .integer(2048), "bytesPerSecond": .integer(0),
                ]))
            }
        }
    }
}
