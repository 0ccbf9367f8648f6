import Testing

/// 64 of `character`: a SHA-256 digest's length.
private func digest(_ character: Character) -> String { String(repeating: character, count: 64) }

extension API {
    /// A body member `POST /downloads` must refuse, and the field its `400` names.
    struct BadMember: Sendable, CustomTestStringConvertible {
        let field: String
        /// JSON member text, e.g. `"priority": 2`; empty: the field is left out.
        let member: String

        init(_ field: String, _ member: String) {
            self.field = field
            self.member = member
        }

        /// A body valid but for this member (which replaces `url` or `destination` when it is one of them).
        var body: String {
            let others = [(#""url": "http://origin.example/a""#, "url"), (#""destination": "files/a""#, "destination")]
                .filter { $0.1 != field }.map(\.0)
            return "{" + (others + (member.isEmpty ? [] : [member])).joined(separator: ", ") + "}"
        }

        var testDescription: String { member.isEmpty ? "no \(field)" : member }

        static func many(_ field: String, _ values: [String]) -> [BadMember] {
            values.map { BadMember(field, $0.isEmpty ? "" : #""\#(field)": \#($0)"#) }
        }
    }

    /// Each field's rules: a bad value is `400` problem+json whose `errors` name that field alone.
    @Suite struct FieldValidationTests {
        private func expectRefused(_ bad: BadMember) async throws {
            try await ServiceAPI.run { api in
                let problem = try await api.post("/downloads", bad.body).problem(400)
                #expect(problem.fields == [bad.field])
                #expect(problem.errors.allSatisfy { !$0.message.isEmpty })
            }
        }

        @Test(arguments: BadMember.many("url", [
            "", "null", "5", #""file:///etc/passwd""#, #""gopher://origin.example/a""#, #""origin.example/a""#,
            #""http://""#, #""http://origin.example/a b""#,
        ]))
        func url(_ bad: BadMember) async throws { try await expectRefused(bad) }

        @Test(arguments: BadMember.many("destination", [
            "", "7", #""/etc/passwd""#, #""../escape""#, #""a/../../escape""#, #""a\u0000b""#, #""""#,
        ]))
        func destination(_ bad: BadMember) async throws { try await expectRefused(bad) }

        @Test(arguments: BadMember.many("session", [
            #""""#, #""two words""#, #""\#(String(repeating: "s", count: 129))""#, "5", #""ümlaut""#, #""a/b""#,
        ]))
        func session(_ bad: BadMember) async throws { try await expectRefused(bad) }

        @Test(arguments: BadMember.many("priority", ["1.5", "-0.1", "2", #""high""#, "true"]))
        func priority(_ bad: BadMember) async throws { try await expectRefused(bad) }

        @Test(arguments: BadMember.many("checksum", [
            #""md4:00""#, #""sha256:xyz""#, #""sha256""#, "5", #""sha256:\#(String(repeating: "a", count: 63))""#,
        ]) + [BadMember("checksum",
                           #""sha256": "\#(digest("a"))", "checksum": "sha256:\#(digest("b"))""#)])
        func checksum(_ bad: BadMember) async throws { try await expectRefused(bad) }

        @Test(arguments: BadMember.many("sha256", [
            #""abc""#, #""\#(digest("g"))""#, #""\#(String(repeating: "a", count: 65))""#, "7",
        ]))
        func sha256(_ bad: BadMember) async throws { try await expectRefused(bad) }

        @Test(arguments: BadMember.many("mirrors", [
            #""https://mirror.example/a""#, #"["file:///x"]"#, "[5]",
            "[" + (1...9).map { #""https://m\#($0).example/a""# }.joined(separator: ", ") + "]",
        ]))
        func mirrors(_ bad: BadMember) async throws { try await expectRefused(bad) }

        @Test(arguments: BadMember.many("connections", ["0", "17", "2.5", #""4""#, "-1"]))
        func connections(_ bad: BadMember) async throws { try await expectRefused(bad) }

        @Test(arguments: BadMember.many("headers", [
            #"{"Host": "x"}"#, #"{"Content-Length": "1"}"#, #"{"Transfer-Encoding": "chunked"}"#, #"{"Range": "bytes=0-"}"#,
            #"{"X-A": "a\r\nb"}"#, #"{"X-A": "a\nb"}"#, #"{"X-A": 5}"#, #"["X-A"]"#, #"{"Bad Name": "x"}"#,
        ]))
        func headers(_ bad: BadMember) async throws { try await expectRefused(bad) }

        @Test(arguments: [
            BadMember("discretionary", #""discretionary": "yes""#),
            BadMember("overwrite", #""overwrite": 1"#),
            BadMember("urlRefresh", #""urlRefresh": "true""#),
            BadMember("expectedBytesToReceive", #""expectedBytesToReceive": -1"#),
            BadMember("expectedBytesToSend", #""expectedBytesToSend": 1.5"#),
            BadMember("earliestBeginDate", #""earliestBeginDate": "tomorrow""#),
            BadMember("webhookURL", #""webhookURL": "ftp://hooks.example/x""#),
            BadMember("webhookURL", #""webhookURL": "http://127.0.0.1/hook""#),
            BadMember("metadata", #""metadata": "x""#),
            BadMember("onConflict", #""onConflict": "skip""#),
            BadMember("onConflict", #""overwrite": false, "onConflict": "overwrite""#),
            BadMember("maxBytesPerSecond", #""maxBytesPerSecond": 100"#),
            BadMember("resourceTimeout", #""resourceTimeout": "soon""#),
            BadMember("checksumURL",
                          #""checksumURL": "https://origin.example/SHA256SUMS", "sha256": "\#(digest("a"))""#),
        ])
        func otherFields(_ bad: BadMember) async throws { try await expectRefused(bad) }
    }
}
