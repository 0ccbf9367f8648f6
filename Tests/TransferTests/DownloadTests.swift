import Foundation
import Synchronization
import Testing
import Transfer

@Suite struct DownloadTests {
    @Test func downloadsTheBytesAndTheirDigest() async throws {
        let body = randomBytes(3 * 1024 * 1024 + 17)
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let progress = Mutex<[TransferProgress]>([])
        let result = await engine.run(download(origin.url("/file"), to: directory.file("out"))) { update in
            progress.withLock { $0.append(update) }
        }

        #expect(result.failure == nil)
        #expect(result.httpStatus == 200)
        #expect(contents(directory.file("out")) == body)
        #expect(result.sha256 == sha256Hex(body))
        #expect(result.bytesOnDisk == Int64(body.count))
        #expect(result.bytesThisAttempt == Int64(body.count))
        #expect(result.bytesExpected == Int64(body.count))
        #expect(result.validator == "\"v1\"")
        #expect(result.effectiveURL == origin.url("/file"))
        let reports = progress.withLock { $0 }
        #expect(reports.allSatisfy { $0.bytesOnDisk <= Int64(body.count) })
    }

    @Test func downloadsACloseDelimitedBody() async throws {
        let body = randomBytes(200_000)
        let origin = try TestOrigin { _ in OriginResponse(body: body, framing: .closeDelimited) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let result = await engine.run(download(origin.url("/stream"), to: directory.file("out")))

        #expect(result.failure == nil)
        #expect(result.bytesExpected == nil)
        #expect(contents(directory.file("out")) == body)
        #expect(result.sha256 == sha256Hex(body))
    }

    @Test func downloadsAnEmptyBody() async throws {
        let origin = try TestOrigin { .resource([], etag: "\"empty\"", for: $0) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let result = await engine.run(download(origin.url("/empty"), to: directory.file("out")))

        #expect(result.failure == nil)
        #expect(result.bytesOnDisk == 0)
        #expect(result.sha256 == sha256Hex([]))
    }

    @Test func runsAHundredTransfersAtOnce() async throws {
        let bodies = (0..<100).map { _ in randomBytes(Int.random(in: 1...300_000)) }
        let origin = try TestOrigin { request in
            let index = Int(request.path.dropFirst()) ?? 0
            return .resource(bodies[index], etag: "\"\(index)\"", for: request)
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let results = await withTaskGroup(of: (Int, TransferResult).self) { group in
            for index in bodies.indices {
                group.addTask {
                    (index, await engine.run(download(origin.url("/\(index)"), to: directory.file("\(index)"))))
                }
            }
            return await group.reduce(into: [Int: TransferResult]()) { $0[$1.0] = $1.1 }
        }

        #expect(results.count == bodies.count)
        for (index, body) in bodies.enumerated() {
            #expect(results[index]?.failure == nil)
            #expect(results[index]?.sha256 == sha256Hex(body))
            #expect(contents(directory.file("\(index)")) == body)
        }
    }

    @Test func followsRedirects() async throws {
        let body = randomBytes(1000)
        let origin = try TestOrigin { request in
            request.path == "/old" ? .redirect(to: "/new", status: 301) : .resource(body, etag: "\"new\"", for: request)
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let result = await engine.run(download(origin.url("/old"), to: directory.file("out")))

        #expect(result.failure == nil)
        #expect(result.httpStatus == 200)
        #expect(result.effectiveURL == origin.url("/new"))
        #expect(contents(directory.file("out")) == body)
    }

    @Test func sendsExtraHeadersAndOurUserAgent() async throws {
        let origin = try TestOrigin { _ in OriginResponse(body: Array("ok".utf8)) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = download(origin.url("/h"), to: directory.file("out"))
        request.headers = [("Authorization", "Bearer secret"), ("X-Bad", "a\r\nInjected: yes")]
        _ = await engine.run(request)

        let received = try #require(origin.requests.first)
        #expect(received.header("Authorization") == "Bearer secret")
        #expect(received.header("User-Agent") == "fetchd/0.1")
        #expect(received.header("Injected") == nil)
        #expect(received.header("Range") == nil)
        #expect(received.header("Accept-Encoding") == nil)
    }
}
