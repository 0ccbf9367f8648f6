import DownloadCore
import Testing

/// ftp://, ftps:// and sftp:// as a download's source: accepted where a download's URL goes,
/// credentials from `auth`, and a password never shown.
@Suite struct FileServerURLTests {
    @Test(arguments: [("ftp://h/f", 21), ("ftps://h/f", 990), ("sftp://h/f", 22), ("sftp://u@h:2222/f", 2222)])
    func fileServerSchemesHaveTheirDefaultPorts(_ url: String, _ port: Int) throws {
        let parsed = try HTTPURL.parse(url, schemes: HTTPURL.downloadSchemes).get()
        #expect(parsed.port == port && parsed.isFileServer)
    }

    @Test(arguments: [("sftp://h/f", true), ("SFTP://h/f", true), ("sFtp:x", true), ("ftp://h/f", false),
                      ("sftps://h/f", false), ("sftp", false), ("", false), ("https://h/sftp://", false)])
    func aSchemeIsRecognizedAtTheStartInAnyCase(_ url: String, _ isSFTP: Bool) {
        #expect(HTTPURL.hasScheme("sftp", url) == isSFTP)
    }

    @Test func onlyDownloadsTakeFileServerURLs() {
        #expect(HTTPURL.parse("ftp://h/f") == .failure(.unsupportedScheme("ftp")))
        #expect(HTTPURL.parse("scp://h/f", schemes: HTTPURL.downloadSchemes) == .failure(.unsupportedScheme("scp")))
    }

    @Test(arguments: [
        ("ftp://ann:s3cret@h/f", "ftp://ann:***@h/f"),
        ("sftp://ann:p@ss:w@h:22/a@b", "sftp://ann:***@h:22/a@b"),
        ("ftp://ann@h/f", "ftp://ann@h/f"),
        ("https://h/a:b@c", "https://h/a:b@c"),
        ("ftp://h/f?x=a:b@c", "ftp://h/f?x=a:b@c"),
    ])
    func aPasswordIsMasked(_ url: String, _ shown: String) {
        #expect(URLUserInfo.masked(url) == shown)
    }

    @Test func authBecomesTheURLsUserInfoPercentEncoded() {
        #expect(URLUserInfo.replacing(in: "ftp://old:pw@h:21/f", username: "ann", password: "p@s:s/ü")
            == "ftp://ann:p%40s%3As%2F%C3%BC@h:21/f")
    }

    @Test func theAuthFieldIsWriteOnlyAndForFileServersOnly() throws {
        let body = #"{"url":"sftp://h/f","destination":"f","auth":{"username":"ann","password":"pw"}}"#
        let submission = try SubmissionValidatorTests().validate(body).get()
        #expect(submission.url == "sftp://ann:pw@h/f")
        let http = #"{"url":"https://h/f","destination":"f","auth":{"username":"ann","password":"pw"}}"#
        #expect(try SubmissionValidatorTests().fields(http) == ["auth"])
        let malformed = #"{"url":"ftp://h/f","destination":"f","auth":{"username":"ann"}}"#
        #expect(try SubmissionValidatorTests().fields(malformed) == ["auth"])
    }

    @Test(arguments: [AttemptOutcome.loginFailed("530"), .remoteRefused("550"), .hostKey("mismatch")])
    func fileServerRefusalsFailWithoutRetry(_ outcome: AttemptOutcome) {
        let policy = RetryPolicy(maxAttempts: 5, baseDelay: .seconds(1))
        let history = AttemptHistory(counted: 1, total: 1, sinceProgress: .zero)
        guard case .fail(let error) = policy.decide(outcome, history: history, retryAfter: nil, jitter: 0.5) else {
            Issue.record("\(outcome) should fail at once")
            return
        }
        #expect(["login_failed", "remote_refused", "host_key"].contains(error.code))
        #expect(outcome.isMissingFile == (error.code == "remote_refused"))
    }
}
