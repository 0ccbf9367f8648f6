import DownloadCore
import Foundation
import Testing

extension API {
    /// `POST /uploads` and `GET /uploads/{id}` as a client sees them: the 201 and the Upload it
    /// shows, a source that cannot be sent refused up front, and the kinds kept apart.
    @Suite struct UploadSubmissionTests {
        func source(_ api: ServiceAPI, _ path: String, _ text: String) throws {
            let root = api.fixture.directory + "/uploads"
            let file = URL(fileURLWithPath: root + "/" + path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: file)
        }

        @Test func anUploadIsCreatedShowingItsSourceAndKind() async throws {
            try await ServiceAPI.run { api in
                try source(api, "exports/a.csv", "id,name\n")
                let reply = await api.post("/uploads", #"""
                    {"url": "https://up.example/files/a", "source": "exports/a.csv", "method": "POST", "contentType": "text/csv",
                     "session": "nightly", \#(ServiceAPI.notYet)}
                    """#)
                #expect(reply.status == 201)
                let upload = try reply.json()
                let id = try #require(upload["id"]?.string)
                #expect(reply.headers["Location"] == "/uploads/\(id)")
                #expect(upload["kind"]?.string == "upload" && upload["source"]?.string == "exports/a.csv")
                #expect(upload["url"]?.string == "https://up.example/files/a" && upload["method"]?.string == "POST")
                #expect(upload["protocol"]?.string == "plain" && upload["contentType"]?.string == "text/csv")
                #expect(upload["state"]?.string == "queued" && upload["session"]?.string == "nightly")
                #expect(upload["bytesSent"]?.integer == 0 && upload["bytesTotal"]?.integer == 8)
                #expect(upload["reply"] == .null && upload["sha256"] == .null)
                #expect(upload["destination"] == nil)
                #expect(try await api.get("/uploads/\(id)").json() == upload)
            }
        }

        @Test func aSourceThatCannotBeSentIsRefusedUpFront() async throws {
            try await ServiceAPI.run { api in
                let missing = try await api.post("/uploads", #"{"url": "https://up.example/a", "source": "nothing.bin"}"#).problem(400)
                #expect(missing.errors.map { "\($0.field): \($0.message)" } == ["source: does not exist under the upload root"])
                try FileManager.default.createDirectory(atPath: api.fixture.directory + "/uploads/dir", withIntermediateDirectories: true)
                let directory = try await api.post("/uploads", #"{"url": "https://up.example/a", "source": "dir"}"#).problem(400)
                #expect(directory.errors.map { "\($0.field): \($0.message)" } == ["source: is not a regular file"])
                let invalid = try await api.post("/uploads", #"{"url": "ftp://up.example/a", "source": "../x"}"#).problem(400)
                #expect(invalid.errors.map { "\($0.field): \($0.message)" } == ["url: scheme 'ftp' is not supported: use one of http, https",
                                           "source: must not contain '.' or '..' segments"])
            }
        }

        @Test func eachKindIsFoundOnlyUnderItsOwnPath() async throws {
            try await ServiceAPI.run { api in
                let download = try #require(try await api.post("/downloads", submission("a", ServiceAPI.notYet)).json()["id"]?.string)
                #expect(await api.get("/uploads/\(download)").status == 404)
                #expect(await api.get("/uploads/01NOSUCHJOB").status == 404)
            }
        }
    }
}
