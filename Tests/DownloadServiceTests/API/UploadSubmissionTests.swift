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
                let invalid = try await api.post("/uploads", #"{"url": "gopher://up.example/a", "source": "../x"}"#).problem(400)
                #expect(invalid.errors.map { "\($0.field): \($0.message)" }
                    == ["url: scheme 'gopher' is not supported: use one of ftp, ftps, http, https, sftp",
                        "source: must not contain '.' or '..' segments"])
                // sftp:// could only fail without known host keys.
                let sftp = try await api.post("/uploads", #"{"url": "sftp://up.example/a", "source": "a.bin"}"#).problem(400)
                #expect(sftp.errors.map(\.field) == ["url"])
            }
        }

        @Test func eachKindIsFoundAndChangedOnlyUnderItsOwnPath() async throws {
            try await ServiceAPI.run { api in
                try source(api, "a.bin", "a")
                let download = try #require(try await api.post("/downloads", submission("a", ServiceAPI.notYet)).json()["id"]?.string)
                let upload = try #require(try await api.post("/uploads", #"""
                    {"url": "https://up.example/a", "source": "a.bin", \#(ServiceAPI.notYet)}
                    """#).json()["id"]?.string)
                #expect(try await api.get("/uploads/\(download)").problem(404).json["detail"]?.string == "no upload with this id")
                #expect(try await api.get("/downloads/\(upload)").problem(404).json["detail"]?.string == "no download with this id")
                #expect(await api.send("DELETE", "/downloads/\(upload)").status == 404)
                #expect(await api.post("/uploads/\(download)/pause").status == 404)

                #expect(await api.send("PATCH", "/uploads/\(upload)", body: #"{"priority": 0.9}"#).status == 200)
                #expect(await api.post("/uploads/\(upload)/pause").status == 200)
                #expect(await api.send("DELETE", "/uploads/\(upload)").status == 200)
                let cancelled = try await api.get("/uploads/\(upload)").json()
                #expect(cancelled["state"]?.string == "cancelled" && cancelled["priority"] == .number(0.9))
                #expect(await api.get("/uploads/\(upload)/attempts").status == 200)
                #expect(await api.get("/downloads/\(download)").status == 200)

                // Each list holds its own kind.
                let downloads = try await api.get("/downloads").json()["items"]
                let uploads = try await api.get("/uploads").json()["items"]
                #expect(downloads == .array([try await api.download(download)]))
                #expect(uploads == .array([try await api.get("/uploads/\(upload)").json()]))
            }
        }
    }
}
