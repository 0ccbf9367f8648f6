import Foundation
import Synchronization
import Testing
import Transfer

/// Requests to memory, the address policy in action, cancel and shutdown.
@Suite struct EngineTests {
    @Test func postsABodyAndKeepsTheResponseInMemory() async throws {
        let origin = try TestOrigin { request in
            OriginResponse(status: 202, headers: [("ETag", "\"r\"")], body: Array("accepted \(request.body.count)".utf8))
        }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        let payload = Array(#"{"type":"download.completed"}"#.utf8) + randomBytes(3000)
        var request = TransferRequest(url: origin.url("/hook"), sink: .memory(limit: 1024))
        request.method = .post
        request.body = payload
        request.headers = [("Content-Type", "application/json"), ("webhook-id", "msg_1")]
        request.addressPolicy = .allowAll
        request.totalTimeout = 10
        let result = await engine.run(request)

        #expect(result.failure == nil)
        #expect(result.httpStatus == 202)
        #expect(result.responseBody == Array("accepted \(payload.count)".utf8))
        let received = try #require(origin.requests.first)
        #expect(received.method == "POST")
        #expect(received.body == payload)
        #expect(received.header("Content-Type") == "application/json")
        #expect(received.header("webhook-id") == "msg_1")
        #expect(received.header("Content-Length") == "\(payload.count)")
        #expect(received.header("Expect") == nil)
    }

    @Test func aMemoryBodyOverTheLimitIsTruncated() async throws {
        let body = randomBytes(100_000)
        let origin = try TestOrigin { _ in OriginResponse(status: 500, body: body) }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = TransferRequest(url: origin.url("/"), sink: .memory(limit: 1000))
        request.addressPolicy = .allowAll
        let result = await engine.run(request)

        #expect(result.failure == nil)
        #expect(result.httpStatus == 500)
        #expect(result.responseBody == Array(body.prefix(1000)))
    }

    @Test func retryAfterAsADateBecomesSeconds() async throws {
        let origin = try TestOrigin { _ in
            var date = time(nil) + 3600
            var parts = tm()
            gmtime_r(&date, &parts)
            var text = [CChar](repeating: 0, count: 64)
            strftime(&text, text.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
            let httpDate = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return OriginResponse(status: 429, headers: [("Retry-After", httpDate)])
        }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = TransferRequest(url: origin.url("/"), sink: .memory(limit: 10))
        request.addressPolicy = .allowAll
        let result = await engine.run(request)

        #expect(result.httpStatus == 429)
        let retryAfter = try #require(result.retryAfter)
        #expect(retryAfter > 3590 && retryAfter <= 3600)
    }

    @Test func theDefaultPolicyRefusesLoopbackBeforeConnecting() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: [1]) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = download(origin.url("/"), to: directory.file("out"))
        request.addressPolicy = .publicOnly
        let result = await engine.run(request)

        #expect(result.failure == .blockedAddress("127.0.0.1"))
        #expect(result.httpStatus == nil)
        #expect(origin.connectionsAccepted == 0)
    }

    @Test func aKeptAliveConnectionIsCheckedAgainWhenReused() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: [1]) }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = TransferRequest(url: origin.url("/"), sink: .memory(limit: 10))
        request.addressPolicy = .allowAll
        #expect(await engine.run(request).failure == nil)
        request.addressPolicy = .publicOnly
        let result = await engine.run(request)

        #expect(result.failure == .blockedAddress("127.0.0.1"))
        #expect(origin.requests.count == 1)
    }

    @Test func transfersOneAfterAnotherShareAKeptAliveConnection() async throws {
        let origin = try TestOrigin { request in OriginResponse(body: Array(request.path.utf8)) }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        for path in ["/a", "/b", "/c"] {
            var request = TransferRequest(url: origin.url(path), sink: .memory(limit: 10))
            request.addressPolicy = .allowAll
            let result = await engine.run(request)
            #expect(result.failure == nil)
            #expect(result.responseBody == Array(path.utf8))
        }
        #expect(origin.connectionsAccepted == 1)
    }

    @Test func aKeptAliveConnectionTheOriginClosedIsNotUsedAgain() async throws {
        let origin = try TestOrigin { request in OriginResponse(body: Array(request.path.utf8), behaviour: .closeWhenIdle) }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = TransferRequest(url: origin.url("/a"), sink: .memory(limit: 10))
        request.addressPolicy = .allowAll
        #expect(await engine.run(request).responseBody == Array("/a".utf8))
        // The origin closes the idle connection; the engine notices it while no transfer uses it.
        let deadline = DispatchTime.now() + .seconds(5)
        while origin.connectionsOpen > 0, DispatchTime.now() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        request.url = origin.url("/b")
        let result = await engine.run(request)

        #expect(result.failure == nil)
        #expect(result.responseBody == Array("/b".utf8))
        #expect(origin.connectionsAccepted == 2)
    }

    @Test func anAllowedNetworkLetsLoopbackThrough() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: [1, 2, 3]) }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = TransferRequest(url: origin.url("/"), sink: .memory(limit: 10))
        request.addressPolicy = AddressPolicy(allowPrivate: false, allowedNetworks: [try #require(CIDR("127.0.0.1/32"))])
        let result = await engine.run(request)

        #expect(result.failure == nil)
        #expect(result.responseBody == [1, 2, 3])
    }

    @Test func aRedirectToABlockedAddressIsRefused() async throws {
        let origin = try TestOrigin { request in
            .redirect(to: "http://127.0.0.2:\(request.header("Host")?.split(separator: ":").last ?? "80")/inside")
        }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = TransferRequest(url: origin.url("/"), sink: .memory(limit: 10))
        request.addressPolicy = AddressPolicy(allowPrivate: false, allowedNetworks: [try #require(CIDR("127.0.0.1"))])
        let result = await engine.run(request)

        #expect(result.failure == .blockedAddress("127.0.0.2"))
        #expect(origin.requests.count == 1)
    }

    @Test(.enabled(if: loopbackHostName() != nil, "needs a host name that resolves to 127.0.0.1"))
    func resolvesHostNames() async throws {
        let name = try #require(loopbackHostName())
        let origin = try TestOrigin { _ in OriginResponse(body: Array("by name".utf8)) }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        // Several in a row: the resolver's socketpair comes and goes each time.
        for _ in 0..<5 {
            var request = TransferRequest(url: "http://\(name):\(origin.port)/", sink: .memory(limit: 100))
            request.addressPolicy = .allowAll
            let result = await engine.run(request)
            #expect(result.failure == nil)
            #expect(result.responseBody == Array("by name".utf8))
        }
        var blocked = TransferRequest(url: "http://\(name):\(origin.port)/", sink: .memory(limit: 100))
        blocked.addressPolicy = .publicOnly
        #expect(await engine.run(blocked).failure == .blockedAddress("127.0.0.1"))
    }

    @Test func cancelStopsATransferAndKeepsTheFile() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: randomBytes(10_000_000)) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.file("out")
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = download(origin.url("/slow"), to: path)
        request.maxSpeedBytesPerSecond = 500_000
        let result: TransferResult = await withCheckedContinuation { continuation in
            let id = Mutex<TransferID?>(nil)
            let cancelled = Atomic<Bool>(false)
            let started = engine.start(request, onProgress: { progress in
                // Cancel once something is on disk.
                guard progress.bytesOnDisk > 0, let id = id.withLock({ $0 }),
                      !cancelled.exchange(true, ordering: .relaxed) else { return }
                engine.cancel(id)
            }, onComplete: { continuation.resume(returning: $0) })
            id.withLock { $0 = started }
        }

        #expect(result.failure == .cancelled)
        #expect(result.bytesOnDisk > 0)
        #expect(result.bytesOnDisk < 10_000_000)
        #expect(contents(path).count == Int(result.bytesOnDisk))
    }

    @Test func cancelAfterCompletionDoesNothing() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: [1]) }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = TransferRequest(url: origin.url("/"), sink: .memory(limit: 10))
        request.addressPolicy = .allowAll
        let calls = Atomic<Int>(0)
        let id = Mutex<TransferID?>(nil)
        let result: TransferResult = await withCheckedContinuation { continuation in
            let started = engine.start(request, onProgress: { _ in }, onComplete: {
                calls.add(1, ordering: .relaxed)
                continuation.resume(returning: $0)
            })
            id.withLock { $0 = started }
        }
        engine.cancel(try #require(id.withLock { $0 }))
        // The engine works in order: once a later transfer is done, the cancel has been handled.
        _ = await engine.run(request)

        #expect(result.failure == nil)
        #expect(calls.load(ordering: .relaxed) == 1)
    }

    /// Every response closes its connection, so socket numbers are reused all the time while other
    /// transfers' events are in flight: each transfer must still get its own body, none stall.
    @Test func transfersOnConnectionsClosedAfterEachResponseGetTheirOwnBodies() async throws {
        let origin = try TestOrigin { request in OriginResponse(body: Array(request.path.utf8), framing: .closeDelimited) }
        defer { origin.stop() }
        let engine = makeEngine()
        defer { engine.shutdown() }

        let mismatches = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for round in 0..<40 {
                        let path = "/\(worker)/\(round)"
                        var request = TransferRequest(url: origin.url(path), sink: .memory(limit: 64))
                        request.addressPolicy = .allowAll
                        let result = await engine.run(request)
                        if result.failure != nil || result.responseBody != Array(path.utf8) { wrong += 1 }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        #expect(origin.connectionsAccepted == 320)
    }

    @Test func shutdownClosesKeptAliveConnections() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: [1]) }
        defer { origin.stop() }
        let engine = makeEngine()

        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    var request = TransferRequest(url: origin.url("/"), sink: .memory(limit: 10))
                    request.addressPolicy = .allowAll
                    _ = await engine.run(request)
                }
            }
        }
        #expect(origin.connectionsOpen > 0)
        engine.shutdown()

        // The origin notices the closes on its own threads; give it a moment.
        let deadline = DispatchTime.now() + .seconds(5)
        while origin.connectionsOpen > 0, DispatchTime.now() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(origin.connectionsOpen == 0)
    }

    @Test func shutdownCancelsWhatIsRunningAndLaterStartsFailAtOnce() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: randomBytes(1_000_000), behaviour: .stallAfter(1000)) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()

        let results = Mutex<[TransferResult]>([])
        let receiving = Mutex<Set<Int>>([])
        let allReceiving = DispatchSemaphore(value: 0)
        for index in 0..<5 {
            _ = engine.start(download(origin.url("/\(index)"), to: directory.file("\(index)")),
                             onProgress: { progress in
                                 guard progress.bytesOnDisk > 0 else { return }
                                 let count = receiving.withLock { $0.insert(index); return $0.count }
                                 if count == 5 { allReceiving.signal() }
                             },
                             onComplete: { result in results.withLock { $0.append(result) } })
        }
        allReceiving.wait()
        engine.shutdown()

        #expect(results.withLock { $0.count } == 5)
        #expect(results.withLock { $0 }.allSatisfy { $0.failure == .cancelled })

        let late = await engine.run(download(origin.url("/late"), to: directory.file("late")))
        #expect(late.failure == .cancelled)
    }
}

/// This machine's host name, if it resolves to 127.0.0.1 without DNS (through /etc/hosts): a
/// name curl must resolve with its resolver thread, unlike "localhost", which it short-circuits.
func loopbackHostName() -> String? {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count) == 0 else { return nil }
    let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard !name.isEmpty, name != "localhost",
          let host = try? String(contentsOfFile: "/etc/hosts", encoding: .utf8)
    else { return nil }
    let listed = host.split(separator: "\n").contains { line in
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        return fields.first == "127.0.0.1" && fields.dropFirst().contains { $0 == name }
    }
    return listed ? name : nil
}
