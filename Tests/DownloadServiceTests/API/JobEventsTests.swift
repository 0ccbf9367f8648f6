import DownloadCore
import Testing
import TestSupport
import Transfer

extension API {
    /// `GET /downloads/{id}/events`: the job's current state first, then its changes, each with a
    /// per-job `id:` that grows; the stream ends right after a terminal state event.
    @Suite struct JobEventsTests {
        private func open(_ api: ServiceAPI, _ id: String, lastEventID: String? = nil) async throws -> EventStream {
            let reply = await api.get("/downloads/\(id)/events", headers: lastEventID.map { [("Last-Event-ID", $0)] } ?? [])
            #expect(reply.status == 200)
            #expect(reply.headers["Content-Type"] == "text/event-stream")
            #expect(reply.headers["Cache-Control"] == "no-store")
            return try EventStream(reply)
        }

        private func state(_ frame: EventStream.Frame?) throws -> String? {
            try frame?.json()?["state"]?.string
        }

        private func ids(_ frames: [EventStream.Frame]) -> [Int64] {
            frames.compactMap { $0.id.flatMap { Int64($0) } }
        }

        @Test func theStreamOpensWithTheStateAndFollowsEveryChangeToTheEnd() async throws {
            try await ServiceAPI.run { api in
                let id = try await api.job("a", in: .queued)
                let stream = try await open(api, id)
                let first = await stream.waitForEvents(1)
                #expect(stream.frames.first?["retry"] == "2000")
                #expect(first.first?.event == "state")
                #expect(try first.first?.json()?["id"]?.string == id)
                #expect(try state(first.first) == "queued")

                #expect(await api.post("/downloads/\(id)/pause").status == 200)
                #expect(await api.delete(id).status == 200)
                #expect(await stream.waitForEnd())
                let events = stream.events
                #expect(events.map(\.event) == ["state", "state", "state"])
                #expect(try events.map { try state($0) } == ["queued", "paused", "cancelled"])
                let sequence = ids(events)
                #expect(sequence.count == 3 && sequence == sequence.sorted() && Set(sequence).count == 3)
            }
        }

        @Test func progressComesAsItsOwnEvent() async throws {
            try await ServiceAPI.run { api in
                let id = try await api.job("a", in: .running)
                let stream = try await open(api, id)
                #expect(try state(await stream.waitForEvents(1).first) == "running")
                api.transfers.progress("a", TransferProgress(bytesOnDisk: 300, bytesExpected: 1000))
                let progress = await stream.waitForEvents(2).last
                #expect(progress?.event == "progress")
                #expect(try progress?.json() == .object(["kind": .string("download"), "bytesReceived": .integer(300), "bytesExpected": .integer(1000)]))
                #expect(ids(stream.events).count == 2)
            }
        }

        @Test(arguments: [DownloadState.completed, .failed])
        func aJobThatFinishesEndsItsStreamAfterItsTerminalEvent(_ end: DownloadState) async throws {
            try await ServiceAPI.run { api in
                let id = try await api.job("a", in: .running)
                let stream = try await open(api, id)
                await stream.waitForEvents(1)
                if end == .completed {
                    try api.transfers.succeed("a", body: Array("bytes".utf8))
                } else {
                    api.transfers.complete("a", with: TransferResult(httpStatus: 410))
                }
                #expect(await stream.waitForEnd())
                #expect(try stream.events.map { try state($0) } == ["running", end.rawValue])
            }
        }

        @Test(arguments: [DownloadState.completed, .failed, .cancelled])
        func aFinishedJobsStreamIsItsLastEventAlone(_ end: DownloadState) async throws {
            try await ServiceAPI.run { api in
                let id = try await api.job("a", in: end)
                let stream = try await open(api, id)
                #expect(await stream.waitForEnd())
                #expect(stream.events.count == 1)
                #expect(try state(stream.events.first) == end.rawValue)
            }
        }

        @Test func aFinishedJobsStreamSkipsTheEventTheClientHasSeen() async throws {
            try await ServiceAPI.run { api in
                let id = try await api.job("a", in: .cancelled)
                let whole = try await open(api, id)
                #expect(await whole.waitForEnd())
                let last = try #require(whole.events.first?.id.flatMap { Int64($0) })

                let caughtUp = try await open(api, id, lastEventID: String(last))
                #expect(await caughtUp.waitForEnd())
                #expect(caughtUp.events.isEmpty)
                #expect(caughtUp.frames.first?["retry"] == "2000")

                let behind = try await open(api, id, lastEventID: String(last - 1))
                #expect(await behind.waitForEnd())
                #expect(ids(behind.events) == [last])
            }
        }

        @Test func aLiveJobsStreamResumesWithItsStateNowUnderANewerID() async throws {
            try await ServiceAPI.run { api in
                let id = try await api.job("a", in: .queued)
                let first = try await open(api, id)
                let seen = try #require(ids(await first.waitForEvents(1)).first)
                #expect(await api.post("/downloads/\(id)/pause").status == 200)

                let resumed = try await open(api, id, lastEventID: String(seen))
                let again = await resumed.waitForEvents(1)
                #expect(try state(again.first) == "paused")
                #expect(try #require(ids(again).first) > seen)
            }
        }
    }
}
