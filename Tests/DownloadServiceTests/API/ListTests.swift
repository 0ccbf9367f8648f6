import DownloadCore
import Testing

extension API {
    /// `GET /downloads`: newest first, in pages of `limit` joined by `cursor`, narrowed by `state`
    /// and `session`.
    @Suite struct ListTests {
        /// The ids and `nextCursor` of one page.
        private func page(_ api: ServiceAPI, _ query: String) async throws -> (ids: [String], next: String?) {
            let reply = await api.get("/downloads" + query)
            #expect(reply.status == 200)
            let json = try reply.json()
            return ((json["items"]?.array ?? []).compactMap { $0["id"]?.string }, json["nextCursor"]?.string)
        }

        @Test func pagesFollowOneAnotherNewestFirst() async throws {
            try await ServiceAPI.run { api in
                var created: [String] = []
                for n in 1...5 { created.append(try await api.create("j\(n)", ServiceAPI.notYet)) }
                var seen: [String] = []
                var query = "?limit=2"
                var pages = 0
                while true {
                    let (ids, next) = try await page(api, query)
                    #expect(ids.count == (pages < 2 ? 2 : 1))
                    seen += ids
                    pages += 1
                    guard let next, pages < 5 else { break }
                    query = "?limit=2&cursor=" + next
                }
                #expect(pages == 3)
                #expect(seen == created.reversed())
            }
        }

        @Test func aPageHolds100JobsUnlessToldOtherwise() async throws {
            try await ServiceAPI.run { api in
                let items = (1...101).map { submission("j\($0)", ServiceAPI.notYet) }.joined(separator: ", ")
                #expect(await api.post("/downloads/batch", #"{"items": [\#(items)]}"#).status == 200)
                let first = try await page(api, "")
                #expect(first.ids.count == 100)
                let rest = try await page(api, "?cursor=" + (try #require(first.next)))
                #expect(rest.ids.count == 1)
                #expect(rest.next == nil)
                #expect(try await page(api, "?limit=1000").ids.count == 101)
            }
        }

        @Test func stateAndSessionNarrowTheList() async throws {
            try await ServiceAPI.run { api in
                let pausedInA = try await api.job("a1", in: .paused, session: "a")
                let queuedInA = try await api.job("a2", in: .queued, session: "a")
                let pausedInB = try await api.job("b1", in: .paused, session: "b")
                #expect(try await page(api, "?state=paused").ids == [pausedInB, pausedInA])
                #expect(try await page(api, "?session=a").ids == [queuedInA, pausedInA])
                #expect(try await page(api, "?session=a&state=paused").ids == [pausedInA])
                #expect(try await page(api, "?state=completed").ids == [])
                #expect(try await page(api, "?session=nobody").ids == [])
            }
        }

        @Test(arguments: [("?limit=0", "limit"), ("?limit=1001", "limit"), ("?limit=ten", "limit"), ("?state=done", "state"),
                          ("?session=two+words", "session"), ("?cursor=", "cursor"), ("?cursor=a%20b", "cursor")])
        func aBadQueryIs400(query: String, field: String) async throws {
            try await ServiceAPI.run { api async throws in
                #expect(try await api.get("/downloads" + query).problem(400).fields == [field])
            }
        }
    }
}
