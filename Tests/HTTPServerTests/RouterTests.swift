@testable import HTTPServer
import Foundation
import Testing

private func textResponse(_ text: String) -> HTTPResponse {
    HTTPResponse(status: 200, body: .bytes(Array(text.utf8)))
}

private func bodyText(_ response: HTTPResponse) -> String {
    if case .bytes(let bytes) = response.body { return String(decoding: bytes, as: UTF8.self) }
    return ""
}

@Suite struct RouterTests {
    let router: Router = {
        var router = Router()
        router.add("GET", "/downloads/{id}") { _, parameters in textResponse("get \(parameters["id"] ?? "-")") }
        router.add("DELETE", "/downloads/{id}") { _, parameters in textResponse("delete \(parameters["id"] ?? "-")") }
        router.add("POST", "/downloads/{id}/pause") { _, parameters in textResponse("pause \(parameters["id"] ?? "-")") }
        router.add("GET", "/downloads/stats") { _, _ in textResponse("stats") }
        router.add("GET", "/") { _, _ in textResponse("root") }
        return router
    }()

    private func call(_ method: String, _ target: String) async -> HTTPResponse {
        await router.handle(HTTPRequest(method: method, target: target))
    }

    @Test func bindsDecodedParameters() async {
        #expect(bodyText(await call("GET", "/downloads/abc")) == "get abc")
        #expect(bodyText(await call("POST", "/downloads/a%20b/pause")) == "pause a b")
        // An encoded slash stays inside its segment.
        #expect(bodyText(await call("GET", "/downloads/a%2Fb")) == "get a/b")
        #expect(bodyText(await call("GET", "/")) == "root")
    }

    @Test func prefersLiteralSegmentsWhateverTheOrderOfRegistration() async {
        #expect(bodyText(await call("GET", "/downloads/stats")) == "stats")
    }

    @Test func dispatchesHEADToTheGETHandler() async {
        #expect(bodyText(await call("HEAD", "/downloads/x")) == "get x")
    }

    @Test func answersUnknownPathsWith404Problem() async {
        for target in ["/nope", "/downloads", "/downloads/", "/downloads/x/pause/more", "/downloads//pause"] {
            let response = await call("GET", target)
            #expect(response.status == 404, "\(target)")
            #expect(response.headers["Content-Type"] == "application/problem+json")
        }
    }

    @Test func answersOtherMethodsWith405AndAllow() async {
        for method in ["PUT", "POST", "BREW", "get"] {
            let response = await call(method, "/downloads/x")
            #expect(response.status == 405)
            #expect(response.headers["Allow"] == "DELETE, GET, HEAD")
            #expect(response.headers["Content-Type"] == "application/problem+json")
        }
        let pause = await call("GET", "/downloads/x/pause")
        #expect(pause.status == 405)
        #expect(pause.headers["Allow"] == "POST")
    }

    @Test func matchesThePathOfAbsoluteFormTargetsAndIgnoresTheQuery() async {
        #expect(bodyText(await call("GET", "http://example.com/downloads/q?x=1")) == "get q")
    }
}
