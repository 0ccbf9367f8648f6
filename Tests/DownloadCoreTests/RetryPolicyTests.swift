import DownloadCore
import Testing

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1))

    @Test(arguments: [408, 429, 500, 502, 503, 599])
    func transientStatusesAreRetried(status: Int) {
        guard case .retry = policy.decide(.http(status: status), history: .counted(1), retryAfter: nil, jitter: 0.5) else {
            Issue.record("\(status) should be retried")
            return
        }
    }

    @Test(arguments: [400, 401, 403, 404, 410, 451])
    func otherClientErrorsFailAtOnce(status: Int) {
        #expect(policy.decide(.http(status: status), history: .counted(1), retryAfter: nil, jitter: 0.5)
            == .fail(DownloadError(code: "http_status", message: "the origin answered \(status)")))
    }

    @Test func transientFailuresStopAfterMaxAttempts() {
        guard case .fail(let error) = policy.decide(.network("reset"), history: .counted(3), retryAfter: nil, jitter: 0.5) else {
            Issue.record("expected failure after the last attempt")
            return
        }
        #expect(error.code == "network")
    }

    @Test func anUnreachableProxyIsRetriedAsProxy() {
        guard case .retry(_, let cause, true) = policy.decide(.proxy("connection refused"), history: .counted(1), retryAfter: nil, jitter: 0.5) else {
            Issue.record("a proxy failure should be retried")
            return
        }
        #expect(cause.code == "proxy")
    }

    @Test func permanentOutcomesHaveTheirCodes() {
        let codes: [(AttemptOutcome, String)] = [
            (.tooLarge, "too_large"), (.blockedAddress("127.0.0.1"), "blocked_address"),
            (.unsupportedScheme("ftp"), "unsupported_scheme"), (.tls("unable to get local issuer certificate"), "tls"),
        ]
        for (outcome, code) in codes {
            guard case .fail(let error) = policy.decide(outcome, history: .counted(1), retryAfter: nil, jitter: 0.5) else {
                Issue.record("\(outcome) should fail")
                continue
            }
            #expect(error.code == code)
        }
    }

    @Test func backoffDoublesWithJitterAndHonoursRetryAfter() {
        #expect(policy.delay(afterAttempt: 1, retryAfter: nil, jitter: 0.5) == .seconds(1))
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil, jitter: 0.5) == .seconds(4))
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil, jitter: 0) == .seconds(3))
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil, jitter: 1) == .seconds(5))
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(30), jitter: 0.5) == .seconds(30))
        #expect(RetryPolicy(maxAttempts: 99, baseDelay: .seconds(1), maxDelay: .seconds(60))
            .delay(afterAttempt: 40, retryAfter: nil, jitter: 0.5) == .seconds(60))
    }
}

extension AttemptHistory {
    /// `n` attempts that all reached the origin, the last byte just now.
    static func counted(_ n: Int) -> AttemptHistory { AttemptHistory(counted: n, total: n, sinceProgress: .zero) }
}

@Suite struct OutageTests {
    let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), maxDelay: .seconds(60), noProgressTimeout: .seconds(3600))

    @Test func anUnreachableOriginDoesNotUseUpTheAttemptsUntilTheNoProgressTimeout() {
        let history = AttemptHistory(counted: 3, total: 40, sinceProgress: .seconds(3599))
        #expect(policy.decide(.unreachable("connection refused"), history: history, retryAfter: nil, jitter: 0.5)
            == .retry(after: .seconds(60), cause: DownloadError(code: "network", message: "connection refused"), outage: true))
        var late = history
        late.sinceProgress = .seconds(3600)
        #expect(policy.decide(.unreachable("connection refused"), history: late, retryAfter: nil, jitter: 0.5)
            == .fail(DownloadError(code: "network", message: "connection refused")))
    }

    @Test func aProxyThatCannotBeReachedIsAnOutageWithItsOwnCode() {
        let history = AttemptHistory(counted: 3, total: 10, sinceProgress: .seconds(10))
        guard case .retry(_, let cause, true) = policy.decide(.proxy("refused"), history: history, retryAfter: nil, jitter: 0.5) else {
            Issue.record("a proxy outage is retried without counting")
            return
        }
        #expect(cause.code == "proxy")
    }

    @Test func aFullDiskWaitsForSpaceUntilTheDiskWaitIsOver() {
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), diskWait: .seconds(600))
        let cause = DownloadError(code: "disk_full", message: "no space left on the device")
        #expect(policy.decide(.diskFull, history: AttemptHistory(counted: 9, total: 9, sinceProgress: .zero, sinceDiskFull: .seconds(599)),
                              retryAfter: nil, jitter: 0.5) == .waitForDisk(cause: cause))
        #expect(policy.decide(.diskFull, history: AttemptHistory(counted: 9, total: 9, sinceProgress: .zero, sinceDiskFull: .seconds(600)),
                              retryAfter: nil, jitter: 0.5) == .fail(cause))
    }

    @Test func answersStillCountAgainstMaxAttempts() {
        let history = AttemptHistory(counted: 3, total: 40, sinceProgress: .zero)
        #expect(policy.decide(.http(status: 503), history: history, retryAfter: nil, jitter: 0.5)
            == .fail(DownloadError(code: "http_status", message: "the origin answered 503")))
    }
}

@Suite struct DownloadStateTests {
    @Test func terminalStatesNeverChangeButAFailedJobMayBeRetried() {
        for from in DownloadState.allCases where from.isTerminal {
            for to in DownloadState.allCases where (from, to) != (.failed, .queued) {
                #expect(!from.canTransition(to: to), "\(from) → \(to)")
            }
        }
        #expect(DownloadState.failed.canTransition(to: .queued))
    }

    @Test func resumableFailuresKeepTheirPartialData() {
        for code in [ErrorCode.network, ErrorCode.timeout, "proxy", "url_expired"] {
            #expect(DownloadError(code: code, message: "").isResumable(httpStatus: nil), "\(code)")
        }
        for status in [408, 429, 500, 503, 599] {
            #expect(DownloadError(code: ErrorCode.httpStatus, message: "").isResumable(httpStatus: status), "\(status)")
        }
        for status in [400, 403, 404, 410, 416] {
            #expect(!DownloadError(code: ErrorCode.httpStatus, message: "").isResumable(httpStatus: status), "\(status)")
        }
        for code in [ErrorCode.checksumMismatch, ErrorCode.tooLarge, ErrorCode.blockedAddress, ErrorCode.destinationExists, ErrorCode.diskFull] {
            #expect(!DownloadError(code: code, message: "").isResumable(httpStatus: nil), "\(code)")
        }
    }

    @Test func aClientMayPauseQueuedOrRunningJobsAndResumeOnlyPausedOnes() {
        #expect(DownloadState.queued.canTransition(to: .paused))
        #expect(DownloadState.running.canTransition(to: .paused))
        #expect(DownloadState.paused.canTransition(to: .queued))
        #expect(!DownloadState.paused.canTransition(to: .running))
        #expect(!DownloadState.paused.canTransition(to: .completed))
    }
}
