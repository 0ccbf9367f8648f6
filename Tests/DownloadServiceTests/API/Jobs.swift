import DownloadCore
import Testing
import TestSupport
import Transfer

/// Jobs brought to a state the way clients and the origin bring them there: through the API,
/// and attempts that the fake engine ends as the test says.
extension ServiceAPI {
    /// A start date the fake clock never reaches: the job stays queued.
    static let notYet = #""earliestBeginDate": "2030-01-01T00:00:00Z""#

    /// Creates the job `name` (see `submission`) with `fields`; returns its id.
    func create(_ name: String, _ fields: String = "") async throws -> String {
        let reply = await post("/downloads", submission(name, fields))
        try #require(reply.status == 201)
        return try #require(try reply.json()["id"]?.string)
    }

    /// The job `name` of `session`, in `state`; returns its id.
    func job(_ name: String, in state: DownloadState, session: String = "default") async throws -> String {
        let inSession = #""session": "\#(session)""#
        switch state {
        case .queued:
            return try await create(name, inSession + ", " + Self.notYet)
        case .running:
            let id = try await create(name, inSession)
            try #require(await eventually { await self.state(id) == "running" })
            return id
        case .paused, .cancelled:
            let id = try await job(name, in: .queued, session: session)
            let reply = await (state == .paused ? post("/downloads/\(id)/pause") : delete(id))
            try #require(reply.status == 200)
            return id
        case .completed, .failed:
            let id = try await job(name, in: .running, session: session)
            if state == .completed {
                try transfers.succeed(name, body: Array("the file \(name)".utf8))
            } else {
                transfers.complete(name, with: TransferResult(httpStatus: 404))
            }
            try #require(await eventually { await self.state(id) == state.rawValue })
            return id
        }
    }
}
