import Testing

extension API {
    /// `Idempotency-Key` on `POST /downloads` and `POST /downloads/batch`: a retry with the same key
    /// and body gets the original answer; another body is `422`; a key must be 1–255 characters.
    @Suite struct IdempotencyTests {
        private func key(_ value: String) -> [(String, String)] { [("Idempotency-Key", value)] }

        @Test func theSameKeyAndBodyAnswerTheOriginal201() async throws {
            try await ServiceAPI.run { api async throws in
                let first = await api.post("/downloads", submission("a"), headers: key("k1"))
                let again = await api.post("/downloads", submission("a"), headers: key("k1"))
                #expect(first.status == 201)
                #expect(again.status == 201)
                #expect(again.headers["Location"] == first.headers["Location"])
                #expect(try again.json()["id"] == first.json()["id"])
                #expect(try await api.get("/downloads").json()["items"]?.array?.count == 1)
            }
        }

        @Test func aQuotedKeyIsTheSameAsABareOne() async throws {
            try await ServiceAPI.run { api async throws in
                let bare = await api.post("/downloads", submission("a"), headers: key("k1"))
                let quoted = await api.post("/downloads", submission("a"), headers: key(#""k1""#))
                #expect(quoted.status == 201)
                #expect(try quoted.json()["id"] == bare.json()["id"])
            }
        }

        @Test func theSameKeyWithAnotherBodyIs422() async throws {
            try await ServiceAPI.run { api async throws in
                #expect(await api.post("/downloads", submission("a"), headers: key("k1")).status == 201)
                let other = await api.post("/downloads", submission("b"), headers: key("k1"))
                #expect(try other.problem(422).json["title"]?.string == "Unprocessable Content")
                #expect(try await api.get("/downloads").json()["items"]?.array?.count == 1)
            }
        }

        /// Without the key the retry is a second job for a destination a live job owns.
        @Test func anotherKeyForTheSameBodyIsASecondJobAndItsDestinationIsBusy() async throws {
            try await ServiceAPI.run { api in
                #expect(await api.post("/downloads", submission("a"), headers: key("k1")).status == 201)
                try await api.post("/downloads", submission("a"), headers: key("k2")).problem(409)
            }
        }

        @Test(arguments: [(255, 201), (256, 400), (1000, 400)])
        func aKeyMayHaveUpTo255Characters(length: Int, status: Int) async throws {
            try await ServiceAPI.run { api async throws in
                let reply = await api.post("/downloads", submission("a"), headers: key(String(repeating: "k", count: length)))
                #expect(reply.status == status)
                if status == 400 { #expect(try reply.problem(400).fields == ["Idempotency-Key"]) }
            }
        }

        @Test(arguments: ["", #""""#, "  "])
        func anEmptyKeyIs400(empty: String) async throws {
            try await ServiceAPI.run { api async throws in
                let reply = await api.post("/downloads", submission("a"), headers: key(empty))
                #expect(try reply.problem(400).fields == ["Idempotency-Key"])
            }
        }

        @Test func aBatchIsOneRequestForItsKey() async throws {
            try await ServiceAPI.run { api in
                let body = #"{"items": [\#(submission("a")), \#(submission("b"))]}"#
                let first = await api.post("/downloads/batch", body, headers: key("b1"))
                let again = await api.post("/downloads/batch", body, headers: key("b1"))
                #expect(first.status == 200)
                #expect(again.status == 200)
                #expect(try again.json() == first.json())
                #expect(try await api.get("/downloads").json()["items"]?.array?.count == 2)

                let other = #"{"items": [\#(submission("c"))]}"#
                try await api.post("/downloads/batch", other, headers: key("b1")).problem(422)
                try await api.post("/downloads/batch", body, headers: key(String(repeating: "k", count: 256))).problem(400)
            }
        }
    }
}
