import DownloadCore
import Testing

extension API {
    /// `POST /downloads` as a client sees it: the 201 and what it shows, and the refusals of bodies
    /// that are not JSON or not a submission.
    @Suite struct SubmissionTests {
        @Test func aJobIsCreatedWithItsLocationAndEveryFieldAsGiven() async throws {
            try await ServiceAPI.run { api in
                let reply = await api.post("/downloads", submission("a", #"""
                    "session": "batch-7", "priority": 0.9, "discretionary": true, "expectedBytesToReceive": 2048,
                    "metadata": {"owner": "me", "n": [1, 2]}, "mirrors": ["https://mirror.example/a"], "connections": 4,
                    "maxBytesPerSecond": 4096, "checksum": "md5:d41d8cd98f00b204e9800998ecf8427e", "onConflict": "rename",
                    \#(ServiceAPI.notYet)
                    """#))
                #expect(reply.status == 201)
                #expect(reply.headers["Content-Type"] == "application/json")
                let job = try reply.json()
                let id = try #require(job["id"]?.string)
                #expect(reply.headers["Location"] == "/downloads/\(id)")
                #expect(job["url"]?.string == "http://origin.example/a")
                #expect(job["destination"]?.string == "files/a")
                #expect(job["session"]?.string == "batch-7")
                #expect(job["state"]?.string == "queued")
                #expect(job["waitingFor"]?.string == "earliestBeginDate")
                #expect(job["earliestBeginDate"]?.string == "2030-01-01T00:00:00Z")
                #expect(job["priority"] == .number(0.9))
                #expect(job["discretionary"] == .bool(true))
                #expect(job["expectedBytesToReceive"]?.integer == 2048)
                #expect(job["metadata"] == .object(["owner": .string("me"), "n": .array([.integer(1), .integer(2)])]))
                #expect(job["mirrors"] == .array([.string("https://mirror.example/a")]))
                #expect(job["connections"]?.integer == 4)
                #expect(job["maxBytesPerSecond"]?.integer == 4096)
                #expect(job["checksum"]?.string == "md5:d41d8cd98f00b204e9800998ecf8427e")
                #expect(job["onConflict"]?.string == "rename")
                #expect(job["attempts"]?.integer == 0)
                #expect(job["error"] == .null)
                #expect(try await api.download(id) == job)
            }
        }

        @Test func theDefaultsAreFilledIn() async throws {
            try await ServiceAPI.run { api in
                let job = try await api.post("/downloads", submission("a", ServiceAPI.notYet)).json()
                #expect(job["session"]?.string == "default")
                #expect(job["priority"] == .number(0.5))
                #expect(job["discretionary"] == .bool(false))
                #expect(job["onConflict"]?.string == "fail")
                #expect(job["connections"]?.integer == 1)
                #expect(job["webhookURL"] == .null)
                #expect(job["bytesReceived"]?.integer == 0)
            }
        }

        @Test func aDestinationKeepsItsSpacesQuotesAndNonASCIIAsGiven() async throws {
            try await ServiceAPI.run { api async throws in
                let destination = #"files/a b \"c\" <d> é.bin"#
                let reply = await api.post("/downloads", #"{"url": "http://origin.example/a", "destination": "\#(destination)"}"#)
                #expect(reply.status == 201)
                #expect(try reply.json()["destination"]?.string == #"files/a b "c" <d> é.bin"#)
            }
        }

        @Test func aDigestInUpperCaseIsShownInLowerCase() async throws {
            try await ServiceAPI.run { api async throws in
                let digest = String(repeating: "AB", count: 32)
                let reply = await api.post("/downloads", submission("a", #""sha256": "\#(digest)""#))
                #expect(reply.status == 201)
                #expect(try reply.json()["sha256"]?.string == digest.lowercased())
            }
        }

        @Test func originHeadersAreShownByNameAndTheirValuesNever() async throws {
            try await ServiceAPI.run { api in
                let reply = await api.post("/downloads", submission("a", #""headers": {"X-Trace": "t-1", "Authorization": "Bearer s3cr3t"}"#))
                #expect(reply.status == 201)
                let id = try #require(try reply.json()["id"]?.string)
                let read = await api.get("/downloads/\(id)")
                #expect(try read.json()["headers"] == .array([.string("Authorization"), .string("X-Trace")]))
                #expect(try reply.json()["headers"] == read.json()["headers"])
                for text in [reply.text, read.text] {
                    #expect(text?.contains("s3cr3t") == false)
                    #expect(text?.contains("t-1") == false)
                }
            }
        }

        @Test func aFullQueueIs429WithRetryAfter() async throws {
            try await ServiceAPI.run(["max-queued": "1"]) { api in
                _ = try await api.create("a", ServiceAPI.notYet)
                let reply = await api.post("/downloads", submission("b"))
                try reply.problem(429)
                #expect(reply.headers["Retry-After"] != nil)
                let batch = try await api.post("/downloads/batch", #"{"items": [\#(submission("c"))]}"#).json()
                #expect(batch["items"]?[0]?["status"]?.integer == 429)
            }
        }

        @Test func unknownFieldsAreEachNamed() async throws {
            try await ServiceAPI.run { api in
                let reply = await api.post("/downloads", submission("a", #""destinaton": "x", "priorty": 1"#))
                let problem = try reply.problem(400)
                #expect(problem.json["title"]?.string == "Bad Request")
                #expect(problem.fields == ["destinaton", "priorty"])
                #expect(problem.errors.allSatisfy { $0.message == "unknown field" })
                #expect(problem.json["detail"]?.string?.contains("destinaton") == true)
            }
        }

        @Test func everyBadFieldIsReportedAtOnce() async throws {
            try await ServiceAPI.run { api async throws in
                let reply = await api.post("/downloads", #"{"url": 5, "destination": "/abs", "priority": "high", "connections": 0}"#)
                #expect(Set(try reply.problem(400).fields) == ["url", "destination", "priority", "connections"])
                #expect(try await api.get("/downloads").json()["items"] == .array([]))
            }
        }

        @Test(arguments: ["{", "", "[1,", #"{"url": }"#, #"{"url": "http://origin.example/a",}"#])
        func aBodyThatIsNotJSONIs400(body: String) async throws {
            try await ServiceAPI.run { api in
                try await api.post("/downloads", body).problem(400)
            }
        }

        @Test(arguments: ["[]", #""text""#, "42", "null"])
        func aBodyThatIsNotAnObjectIs400(body: String) async throws {
            try await ServiceAPI.run { api in
                try await api.post("/downloads", body).problem(400)
            }
        }

        @Test(arguments: [nil, "text/plain", "application/x-www-form-urlencoded", "application/jsonp", "multipart/form-data"])
        func aBodyNotDeclaredJSONIs415(contentType: String?) async throws {
            try await ServiceAPI.run { api async throws in
                let reply = await api.send("POST", "/downloads", body: submission("a"), contentType: contentType)
                #expect(try reply.problem(415).json["title"]?.string == "Unsupported Media Type")
            }
        }

        @Test(arguments: ["application/json; charset=utf-8", "Application/JSON", " application/json "])
        func jsonIsRecognisedInAnyCaseAndWithParameters(contentType: String) async throws {
            try await ServiceAPI.run { api in
                #expect(await api.send("POST", "/downloads", body: submission("a"), contentType: contentType).status == 201)
            }
        }
    }
}
