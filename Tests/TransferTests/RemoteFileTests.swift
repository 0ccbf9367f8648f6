import CCurl
import Testing
@testable import Transfer

/// The resume rules for FTP and SFTP: the server's size and modification time stand in for the
/// HTTP head, and for `If-Range`.
@Suite struct RemoteFileTests {
    let file = RemoteFile(size: 1000, modified: 1_700_000_000)

    @Test func aFreshStartTakesTheWholeFile() throws {
        let plan = try plan(resumeOffset: nil, expected: nil)
        #expect(plan == ResponsePlan(action: .writeFile(startOver: true), bytesExpected: 1000))
    }

    @Test func theSameFileResumesAtTheOffset() throws {
        let plan = try plan(resumeOffset: 400, expected: file.validator)
        #expect(plan == ResponsePlan(action: .writeFile(startOver: false), bytesExpected: 1000))
    }

    @Test func aFileAlreadyWholeIsComplete() throws {
        #expect(try plan(resumeOffset: 1000, expected: file.validator).action == .alreadyComplete)
    }

    @Test func aChangedFileIsNoResume() {
        #expect(file.head(resumeOffset: 400, expected: RemoteFile(size: 1000, modified: 1_700_000_001).validator) == nil)
        #expect(file.head(resumeOffset: 400, expected: RemoteFile(size: 999, modified: 1_700_000_000).validator) == nil)
    }

    @Test func partialDataFromAMirrorResumesOnTheDigestsWord() throws {
        #expect(try plan(resumeOffset: 400, expected: "").action == .writeFile(startOver: false))
    }

    @Test func theFileHeldIsNotFetchedAgainButAChangedOneIs() throws {
        let held = file.validator
        let unchanged = ResponseReceiver(file: nil, memoryLimit: 0, resumeOffset: nil, maxBytes: nil, followRedirects: false,
                                         keepsHeaderFields: true, remoteFileHeld: held)
        #expect(!unchanged.receiveRemoteFile(file, expected: nil))
        #expect(unchanged.head?.status == 304 && unchanged.head?.etag == held)
        #expect(unchanged.stopReason == .bodyNotNeeded)
        for other in [RemoteFile(size: 1000, modified: 1_700_000_001), RemoteFile(size: 999, modified: 1_700_000_000)] {
            let changed = ResponseReceiver(file: nil, memoryLimit: 0, resumeOffset: nil, maxBytes: nil, followRedirects: false,
                                           keepsHeaderFields: true, remoteFileHeld: held)
            #expect(changed.receiveRemoteFile(other, expected: nil))
            #expect(changed.head?.status == 200 && changed.head?.etag == other.validator)
        }
    }

    @Test func aSizeAloneDoesNotTellAFileUnchanged() {
        let timeless = RemoteFile(size: 1000, modified: nil)
        #expect(!timeless.isUnchanged(from: timeless.validator))
        #expect(file.isUnchanged(from: file.validator))
    }

    @Test func theSchemeIsTold() {
        #expect(RemoteFile.Scheme(url: "SFTP://h/f") == .sftp)
        #expect(RemoteFile.Scheme(url: "https://h/f") == nil)
    }

    @Test func curlErrorsOfFileServersMapToTheirClasses() {
        func map(_ scheme: RemoteFile.Scheme, _ code: CURLcode, _ reply: String? = nil) -> TransferFailure? {
            TransferFailure(remote: scheme, curlCode: code, message: "m", reply: reply)
        }
        #expect(map(.ftp, CURLE_LOGIN_DENIED, "530 Login incorrect.") == .loginFailed("m: 530 Login incorrect."))
        guard case .hostKey(let message)? = map(.sftp, CURLE_PEER_FAILED_VERIFICATION) else {
            Issue.record("an SFTP peer verification failure is a host key failure")
            return
        }
        #expect(message.contains("FETCHD_SSH_KNOWN_HOSTS"))
        #expect(map(.ftps, CURLE_PEER_FAILED_VERIFICATION) == nil)  // a certificate: as for HTTPS
        #expect(map(.ftp, CURLE_USE_SSL_FAILED) == .tls("m"))
        #expect(map(.ftp, CURLE_REMOTE_FILE_NOT_FOUND, "550 Failed to open file.") == .remoteRefused("m: 550 Failed to open file."))
        #expect(map(.ftp, CURLE_FTP_COULDNT_RETR_FILE, "450 Busy") == .network("m: 450 Busy"))
        #expect(map(.ftp, CURLE_FTP_COULDNT_RETR_FILE, "553 No") == .remoteRefused("m: 553 No"))
        #expect(map(.sftp, CURLE_COULDNT_CONNECT) == nil)
        #expect(map(.ftp, CURLE_OPERATION_TIMEDOUT, "421 Too many connections") == .network("m: 421 Too many connections"))
        #expect(map(.ftp, CURLE_OPERATION_TIMEDOUT) == nil)
    }

    private func plan(resumeOffset: Int64?, expected: String?) throws -> ResponsePlan {
        let head = try #require(file.head(resumeOffset: resumeOffset, expected: expected))
        return ResponsePlan.decide(for: head, resumeOffset: resumeOffset, isFile: true, maxBytes: nil)
    }
}
