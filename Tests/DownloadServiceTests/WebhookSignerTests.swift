import DownloadService
import Testing

@Suite struct WebhookSignerTests {
    // Computed with the reference implementation (Python `standardwebhooks` 1.1.0):
    // Webhook(secret).sign("msg_01JDTEST", datetime.fromtimestamp(1763800000, utc), body)
    static let secret = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
    static let body = Array(#"{"type":"download.completed","data":{}}"#.utf8)

    @Test func matchesTheReferenceImplementation() {
        let signer = WebhookSigner(secrets: [Self.secret])
        #expect(signer.signature(id: "msg_01JDTEST", timestamp: 1763800000, body: Self.body)
            == "v1,EwmQhvXjneiXWI8dsr3yJARiOOYXISXSg5FAyqlozD8=")
    }

    @Test func signsOncePerSecretWhenRotating() throws {
        let signer = WebhookSigner(secrets: [Self.secret, "whsec_c2Vjb25kLXNlY3JldC1rZXktZm9yLXRlc3Rpbmc="])
        let signature = try #require(signer.signature(id: "msg_01JDTEST", timestamp: 1763800000, body: Self.body))
        let parts = signature.split(separator: " ")
        #expect(parts.count == 2)
        #expect(parts[0] == "v1,EwmQhvXjneiXWI8dsr3yJARiOOYXISXSg5FAyqlozD8=")
        #expect(parts[1].hasPrefix("v1,") && parts[1] != parts[0])
    }

    @Test func withoutSecretsNothingIsSigned() {
        #expect(WebhookSigner(secrets: []).signature(id: "msg_1", timestamp: 1, body: []) == nil)
    }
}
