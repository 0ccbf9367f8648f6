@testable import DownloadService
import Foundation
import Testing

extension API {
    /// Who may write a destination: a file already there is `409` unless the job may replace or
    /// rename it; a destination a live job owns is `409` until that job ends.
    @Suite struct DestinationConflictTests {
        private func placeFile(_ api: ServiceAPI, at destination: String) throws {
            try FileManager.default.createDirectory(atPath: api.fixture.files.root + "/files", withIntermediateDirectories: true)
            try writeFile(api.fixture.files.root + "/" + destination, Array("there before".utf8))
        }

        @Test func anExistingFileIs409UnlessTheJobMayOverwriteOrRename() async throws {
            try await ServiceAPI.run { api in
                try placeFile(api, at: "files/a")
                #expect(try await api.post("/downloads", submission("a")).problem(409).json["title"]?.string == "Conflict")
                try await api.post("/downloads", submission("a", #""onConflict": "fail""#)).problem(409)
                #expect(await api.post("/downloads", submission("a", #""overwrite": true"#)).status == 201)
            }
        }

        @Test func renamingLeavesAnExistingFileAlone() async throws {
            try await ServiceAPI.run { api in
                try placeFile(api, at: "files/a")
                #expect(await api.post("/downloads", submission("a", #""onConflict": "rename""#)).status == 201)
            }
        }

        @Test func aDestinationIsFreeAgainOnceItsJobEnds() async throws {
            try await ServiceAPI.run { api in
                let first = try await api.create("a", ServiceAPI.notYet)
                let busy = try await api.post("/downloads", submission("a")).problem(409)
                #expect(busy.json["detail"]?.string?.contains("destination") == true)
                #expect(await api.delete(first).status == 200)
                #expect(await api.post("/downloads", submission("a")).status == 201)
            }
        }
    }
}
