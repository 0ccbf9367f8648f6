import Testing

extension API {
    /// A job's way through its states as a client follows it, and the answers for jobs and paths
    /// that do not exist.
    @Suite struct LifecycleTests {
        @Test func cancellingTwiceAnswers200BothTimesWithTheSameJob() async throws {
            try await ServiceAPI.run { api in
                let id = try await api.job("a", in: .running)
                let first = await api.delete(id)
                let second = await api.delete(id)
                #expect(first.status == 200)
                #expect(second.status == 200)
                let cancelled = try first.json()
                #expect(cancelled["state"]?.string == "cancelled")
                #expect(cancelled["finishedAt"]?.string != nil)
                #expect(try second.json()["finishedAt"] == cancelled["finishedAt"])
            }
        }

        @Test func aFailedJobShowsWhyAndARetryStartsOverKeepingItsAttempts() async throws {
            try await ServiceAPI.run { api in
                let id = try await api.job("a", in: .failed)
                let failed = try await api.download(id)
                #expect(failed["error"]?["code"]?.string == "http_status")
                #expect(failed["httpStatus"]?.integer == 404)
                #expect(failed["attempts"]?.integer == 1)
                let attempts = try await api.get("/downloads/\(id)/attempts").json()["items"]
                #expect(attempts?.array?.count == 1)
                #expect(attempts?[0]?["httpStatus"]?.integer == 404)
                #expect(attempts?[0]?["url"]?.string == "http://origin.example/a")

                let retried = try await api.post("/downloads/\(id)/retry").json()
                #expect(retried["state"]?.string == "queued")
                #expect(retried["error"] == .null)
                #expect(retried["finishedAt"] == .null)
                #expect(retried["attempts"]?.integer == 1)
            }
        }

        /// Its destination went to another job meanwhile: the retry waits until that job ends.
        @Test func aFailedJobIsNotRetriedWhileAnotherLiveJobOwnsItsDestination() async throws {
            try await ServiceAPI.run { api in
                let failed = try await api.job("a", in: .failed, session: "s")
                let owner = try await api.create("a", ServiceAPI.notYet)
                let reply = await api.post("/downloads/\(failed)/retry")
                #expect(try reply.problem(409).json["detail"]?.string?.contains("destination") == true)
                #expect(try await api.post("/sessions/s/retry").json()["changed"]?.integer == 0)
                #expect(await api.state(failed) == "failed")

                #expect(await api.delete(owner).status == 200)
                #expect(try await api.post("/downloads/\(failed)/retry").json()["state"]?.string == "queued")
            }
        }

        @Test func aCompletedJobShowsItsFileAndDigest() async throws {
            try await ServiceAPI.run { api in
                let id = try await api.job("a", in: .completed)
                let job = try await api.download(id)
                #expect(job["path"]?.string == "files/a")
                #expect(job["sha256"]?.string?.count == 64)
                #expect(job["bytesReceived"]?.integer == Int64("the file a".utf8.count))
                #expect(job["error"] == .null)
                #expect(api.fixture.destinationBytes("files/a") == Array("the file a".utf8))
            }
        }

        @Test(arguments: [("GET", ""), ("DELETE", ""), ("PATCH", ""), ("POST", "/pause"), ("POST", "/resume"),
                          ("POST", "/retry"), ("GET", "/attempts"), ("GET", "/events")])
        func anUnknownJobIs404(method: String, suffix: String) async throws {
            try await ServiceAPI.run { api async throws in
                let body: String? = method == "PATCH" ? #"{"priority": 0.1}"# : nil
                let reply = await api.send(method, "/downloads/01UNKNOWNJOB0000000000000" + suffix, body: body)
                #expect(try reply.problem(404).json["title"]?.string == "Not Found")
            }
        }

        @Test func anUnknownPathIs404AndAnUnservedMethodIs405WithAllow() async throws {
            try await ServiceAPI.run { api in
                try await api.get("/no/such/path").problem(404)
                let reply = await api.send("PUT", "/downloads/x")
                try reply.problem(405)
                #expect(reply.headers["Allow"] == "DELETE, GET, HEAD, PATCH")
            }
        }
    }
}
