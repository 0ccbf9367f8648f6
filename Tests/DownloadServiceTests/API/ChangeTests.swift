import Testing
import TestSupport

extension API {
    /// `PATCH /downloads/{id}` (a JSON merge patch) and the strong `ETag` it is conditional on.
    @Suite struct ChangeTests {
        private func etag(_ api: ServiceAPI, _ id: String) async throws -> String {
            try #require(await api.get("/downloads/\(id)").headers["ETag"])
        }

        @Test func theETagIsStrongAndChangesWithEveryChange() async throws {
            try await ServiceAPI.run { api in
                let id = try await api.create("a", ServiceAPI.notYet)
                var tags = [try await etag(api, id)]
                #expect(tags[0].hasPrefix("\"") && tags[0].hasSuffix("\""))
                #expect(try await etag(api, id) == tags[0])  // a read is no change

                let patched = await api.patch(id, #"{"priority": 0.7}"#)
                #expect(patched.status == 200)
                tags.append(try await etag(api, id))
                #expect(patched.headers["ETag"] == tags[1])
                #expect(await api.post("/downloads/\(id)/pause").status == 200)
                tags.append(try await etag(api, id))
                #expect(await api.post("/downloads/\(id)/resume").status == 200)
                tags.append(try await etag(api, id))
                #expect(await api.delete(id).status == 200)
                tags.append(try await etag(api, id))
                #expect(Set(tags).count == tags.count)
            }
        }

        @Test func aPatchIfMatchTheCurrentTagApplies() async throws {
            try await ServiceAPI.run { api in
                let id = try await api.create("a", ServiceAPI.notYet)
                for form in ["the tag", "any", "a list with the tag"] {
                    let current = try await etag(api, id)
                    let condition = switch form {
                    case "the tag": current
                    case "any": "*"
                    default: #""0", \#(current)"#
                    }
                    let reply = await api.patch(id, #"{"priority": 0.25}"#, headers: [("If-Match", condition)])
                    #expect(reply.status == 200)
                    #expect(try reply.json()["priority"] == .number(0.25))
                }
            }
        }

        @Test(arguments: ["stale", "weak", "other"])
        func aPatchIfMatchAnotherTagIs412AndChangesNothing(kind: String) async throws {
            try await ServiceAPI.run { api in
                let id = try await api.create("a", ServiceAPI.notYet)
                let old = try await etag(api, id)
                #expect(await api.patch(id, #"{"priority": 0.8}"#).status == 200)
                let current = try await etag(api, id)
                let condition = switch kind {
                case "stale": old
                case "weak": "W/" + current
                default: #""no-such-tag""#
                }
                let before = try await api.download(id)
                let reply = await api.patch(id, #"{"priority": 0.1}"#, headers: [("If-Match", condition)])
                #expect(try reply.problem(412).json["title"]?.string == "Precondition Failed")
                #expect(try await api.download(id) == before)
            }
        }

        @Test func nullClearsAFieldAndPutsADefaultBack() async throws {
            try await ServiceAPI.run { api in
                let fields = #""priority": 0.9, "webhookURL": "https://hooks.example/a", "metadata": {"a": 1, "b": 2}"#
                let id = try await api.create("a", fields + ", " + ServiceAPI.notYet)
                let job = try await api.patch(id, #"{"priority": null, "webhookURL": null, "metadata": {"a": null, "c": 3}}"#).json()
                #expect(job["priority"] == .number(0.5))
                #expect(job["webhookURL"] == .null)
                #expect(job["metadata"] == .object(["b": .integer(2), "c": .integer(3)]))
                #expect(job["state"]?.string == "queued")
            }
        }

        @Test func aNewStartDateTakesEffect() async throws {
            try await ServiceAPI.run { api in
                let id = try await api.create("a", ServiceAPI.notYet)
                #expect(try await api.download(id)["waitingFor"]?.string == "earliestBeginDate")
                #expect(await api.patch(id, #"{"earliestBeginDate": null}"#).status == 200)
                #expect(await eventually { await api.state(id) == "running" })
            }
        }

        @Test(arguments: [
            (#"{"destination": "files/b"}"#, ["destination"]), (#"{"state": "running"}"#, ["state"]),
            (#"{"session": "other"}"#, ["session"]), (#"{"priority": 2}"#, ["priority"]), (#"{"url": null}"#, ["url"]),
            (#"{"url": "file:///etc/passwd"}"#, ["url"]), (#"{"headers": {"Host": "x"}}"#, ["headers"]),
            (#"{"webhookURL": "http://127.0.0.1/hook"}"#, ["webhookURL"]), ("[]", [""]),
        ])
        func aPatchOfAnotherFieldOrABadValueIs400(body: String, fields: [String]) async throws {
            try await ServiceAPI.run { api in
                let id = try await api.create("a", ServiceAPI.notYet)
                let before = try await api.download(id)
                #expect(try await api.patch(id, body).problem(400).fields == fields)
                #expect(try await api.download(id) == before)
            }
        }

        @Test(arguments: [("application/json", 200), ("application/merge-patch+json", 200), ("text/plain", 415), (nil, 415)])
        func aPatchIsJSONOrAMergePatch(contentType: String?, status: Int) async throws {
            try await ServiceAPI.run { api in
                let id = try await api.create("a", ServiceAPI.notYet)
                let reply = await api.send("PATCH", "/downloads/\(id)", body: #"{"priority": 0.6}"#, contentType: contentType)
                #expect(reply.status == status)
                if status == 415 { try reply.problem(415) }
            }
        }
    }
}
