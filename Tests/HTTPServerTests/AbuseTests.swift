@testable import HTTPServer
import Testing

/// Clients that try to tie the server up: many slow heads at once, and a pipelining flood
/// that never reads. Sizes are kept small enough for a fast suite; Benchmarks/http-abuse.sh
/// does the same at full scale against the fetchd binary and reports memory.
@Suite struct AbuseTests {
    @Test func slowLorisConnectionsAreCutWhileOtherClientsAreServed() async throws {
        try await withServer(configure: { $0.headReadTimeout = 0.5 }) { _, port in
            // Each sends the start of a head and then one byte at a time, never finishing it.
            let lorises = try (0..<100).map { _ in try RawClient.connect(port: port) }
            for loris in lorises { try await loris.send("GET /hello HTTP/1.1\r\nHost: h\r\nX-Slow: ") }
            let trickle = Task {
                while !Task.isCancelled {
                    for loris in lorises { _ = loris.sendWithoutBlocking([UInt8(ascii: "a")]) }
                    try? await Task.sleep(for: .milliseconds(50))
                }
            }
            defer { trickle.cancel() }

            let client = try RawClient.connect(port: port)
            for _ in 0..<20 {
                try await client.send(request("GET", "/hello"))
                #expect(try await client.readResponse().status == 200)
            }
            for loris in lorises {
                #expect(try await loris.readResponse().status == 408)
                #expect(await loris.isClosedByServer())
            }
        }
    }

    @Test func aClientPipeliningTenThousandRequestsWithoutReadingIsHeldBackThenAnsweredInOrder() async throws {
        let padding = String(repeating: "p", count: 1000)
        try await withServer(routes: { router in
            router.add("GET", "/n/{n}") { _, parameters in
                HTTPResponse(status: 200, body: .bytes(Array((parameters["n"] ?? "").utf8) + Array(padding.utf8)))
            }
        }) { _, port in
            let client = try RawClient.connect(port: port)
            let requests = (0..<10_000).map { Array(request("GET", "/n/\($0)", headers: ["X-Padding: \(padding)"]).utf8) }
            // About 10 MB of requests and 10 MB of responses: more than the socket buffers hold.
            // Unread responses stop the server reading, so the kernel soon refuses more input.
            var sent = 0
            var offset = 0
            while sent < requests.count {
                let taken = client.sendWithoutBlocking(Array(requests[sent][offset...]))
                if taken == 0 { break }
                offset += taken
                if offset == requests[sent].count { sent += 1; offset = 0 }
            }
            #expect(sent < requests.count, "the server kept reading a client that reads nothing")

            // Now read, and send the rest as the server makes room. Both from the client's own
            // queues, not from tasks: on a loaded machine the cooperative pool can be busy for
            // seconds, and the head cut off above, left unfinished for the head timeout, is
            // rightly answered 408.
            let rest = Array(requests[sent][offset...]) + requests[(sent + 1)...].joined()
            let sending = client.startSending(rest)
            let responses = try await client.readResponses(requests.count)
            try await sending.finished()
            #expect(responses.allSatisfy { $0.status == 200 })
            let outOfOrder = responses.indices.first { responses[$0].text != "\($0)" + padding }
            #expect(outOfOrder == nil, "response \(outOfOrder ?? 0) is not the answer to request \(outOfOrder ?? 0)")
        }
    }
}
