import DownloadCore
import Testing

extension API {
    /// What each action does to a job in each state: the state it answers `200` with, or `409`
    /// (problem+json) with the job left as it was.
    @Suite struct TransitionTests {
        /// One action on a job in one state, and the state it answers with (nil: `409`).
        struct Case: Sendable, CustomTestStringConvertible {
            let from: DownloadState
            let to: DownloadState?

            init(_ from: DownloadState, _ to: DownloadState?) {
                self.from = from
                self.to = to
            }

            var testDescription: String { "\(from) → \(to.map(\.rawValue) ?? "409")" }
        }

        private func expect(_ action: @escaping @Sendable (ServiceAPI, String) async -> Reply, _ transition: Case,
                            sourceLocation: SourceLocation = #_sourceLocation) async throws {
            try await ServiceAPI.run { api in
                let id = try await api.job("a", in: transition.from)
                let before = try await api.download(id)
                let reply = await action(api, id)
                if let target = transition.to {
                    #expect(reply.status == 200, sourceLocation: sourceLocation)
                    #expect(try reply.json()["state"]?.string == target.rawValue, sourceLocation: sourceLocation)
                    #expect(try reply.json()["id"]?.string == id, sourceLocation: sourceLocation)
                } else {
                    #expect(try reply.problem(409).json["title"]?.string == "Conflict", sourceLocation: sourceLocation)
                    #expect(try await api.download(id)["state"] == before["state"], sourceLocation: sourceLocation)
                }
            }
        }

        @Test(arguments: [Case(.queued, .cancelled), Case(.running, .cancelled), Case(.paused, .cancelled),
                          Case(.cancelled, .cancelled), Case(.completed, nil), Case(.failed, nil)])
        func cancel(_ transition: Case) async throws {
            try await expect({ api, id in await api.delete(id) }, transition)
        }

        @Test(arguments: [Case(.queued, .paused), Case(.running, .paused), Case(.paused, .paused),
                          Case(.cancelled, nil), Case(.completed, nil), Case(.failed, nil)])
        func pause(_ transition: Case) async throws {
            try await expect({ api, id in await api.post("/downloads/\(id)/pause") }, transition)
        }

        /// A job that is queued or running already is answered as it is.
        @Test(arguments: [Case(.paused, .queued), Case(.queued, .queued), Case(.running, .running),
                          Case(.cancelled, nil), Case(.completed, nil), Case(.failed, nil)])
        func resume(_ transition: Case) async throws {
            try await expect({ api, id in await api.post("/downloads/\(id)/resume") }, transition)
        }

        @Test(arguments: [Case(.failed, .queued), Case(.queued, nil), Case(.running, nil), Case(.paused, nil),
                          Case(.cancelled, nil), Case(.completed, nil)])
        func retry(_ transition: Case) async throws {
            try await expect({ api, id in await api.post("/downloads/\(id)/retry") }, transition)
        }

        /// A change keeps the state; a finished job can no longer be changed.
        @Test(arguments: [Case(.queued, .queued), Case(.running, .running), Case(.paused, .paused),
                          Case(.cancelled, nil), Case(.completed, nil), Case(.failed, nil)])
        func patch(_ transition: Case) async throws {
            try await expect({ api, id in await api.patch(id, #"{"priority": 0.9}"#) }, transition)
        }
    }
}
