import DownloadCore
import Testing

extension API {
    /// `POST /downloads/batch`: each item judged on its own, the answer one result per item in order.
    @Suite struct BatchTests {
        @Test func eachItemHasItsOwnStatusInRequestOrder() async throws {
            try await ServiceAPI.run { api in
                let body = #"{"items": [\#(submission("a")), {"url": "file:///etc/passwd", "destination": "files/b"}, "#
                    + #"\#(submission("a")), \#(submission("c", #""colour": "red""#)), \#(submission("d", #""session": "x y""#))]}"#
                let reply = await api.post("/downloads/batch", body)
                #expect(reply.status == 200)
                #expect(reply.headers["Content-Type"] == "application/json")
                let items = try #require(try reply.json()["items"]?.array)
                #expect(items.map { $0["status"]?.integer } == [201, 400, 409, 400, 400])

                let created = try #require(items[0]["download"])
                #expect(created["url"]?.string == "http://origin.example/a")
                #expect(created["state"]?.string == "queued")
                let id = try #require(created["id"]?.string)
                #expect(try await api.download(id)["destination"]?.string == "files/a")

                let problems = items.dropFirst().map { $0["problem"] }
                #expect(problems.map { $0?["status"] } == [.integer(400), .integer(409), .integer(400), .integer(400)])
                #expect(problems.map { $0?["type"]?.string } == Array(repeating: "about:blank", count: 4))
                #expect(problems[0]?["errors"]?[0]?["field"]?.string == "url")
                #expect(problems[2]?["errors"]?[0]?["field"]?.string == "colour")
                #expect(problems[3]?["errors"]?[0]?["field"]?.string == "session")
                #expect(items.dropFirst().allSatisfy { $0["download"] == nil })
                #expect(try await api.get("/downloads").json()["items"]?.array?.count == 1)
            }
        }

        @Test func anEmptyBatchCreatesNothing() async throws {
            try await ServiceAPI.run { api async throws in
                let reply = await api.post("/downloads/batch", #"{"items": []}"#)
                #expect(reply.status == 200)
                #expect(try reply.json() == .object(["items": .array([])]))
            }
        }

        @Test(arguments: [(#"{}"#, "items"), (#"{"items": {}}"#, "items"), ("[]", "items"),
                          (#"{"items": [], "atomic": true}"#, "atomic")])
        func aBodyWithoutAnItemsArrayIs400(body: String, field: String) async throws {
            try await ServiceAPI.run { api async throws in
                #expect(try await api.post("/downloads/batch", body).problem(400).fields == [field])
            }
        }

        @Test func moreThan1000ItemsAre400() async throws {
            try await ServiceAPI.run { api async throws in
                let items = Array(repeating: "{}", count: 1001).joined(separator: ",")
                #expect(try await api.post("/downloads/batch", #"{"items": [\#(items)]}"#).problem(400).fields == ["items"])
                #expect(try await api.get("/downloads").json()["items"]?.array?.count == 0)
            }
        }

        @Test func aBatchNotDeclaredJSONIs415() async throws {
            try await ServiceAPI.run { api in
                try await api.send("POST", "/downloads/batch", body: #"{"items": []}"#, contentType: "text/plain").problem(415)
            }
        }
    }
}
