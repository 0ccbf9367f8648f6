import DownloadCore
@testable import DownloadService
import Foundation
import Persistence
import Testing

extension Objects {
    /// The start after a crash, for jobs whose destination is an object: an interrupted one goes back
    /// to the queue counting its committed parts, wherever its staging file is.
    @Suite struct ObjectRecoveryTests {
        let fixture: ServiceFixture

        init() throws {
            fixture = try ServiceFixture()
        }

        /// The job `obj` into `s3://media/big.bin`, running, with two parts (8 KiB) committed.
        func runningWithTwoParts() throws {
            let destination = try Destination.parse("s3://media/big.bin").get()
            try fixture.submit("obj") { $0.destination = destination }
            _ = try fixture.claim("obj")
            let upload = ObjectUpload(key: "big.bin", uploadID: "up-1", parts: [
                ObjectUpload.Part(number: 1, size: 4096, etag: "\"e1\""), ObjectUpload.Part(number: 2, size: 4096, etag: "\"e2\""),
            ], digestState: "v1:state:")
            #expect(try fixture.store.apply([.objectUpload(id: "obj", upload: upload, expecting: [.running])]) == [true])
        }

        func recover() throws {
            try fixture.recovery.run(now: fixture.clock.now)
        }

        /// Taken over from a node whose staging file is not here: its parts are what it has.
        @Test func anInterruptedObjectCountsItsCommittedPartsWithoutAStagingFile() throws {
            try runningWithTwoParts()

            try recover()

            let queued = try fixture.job("obj")
            #expect(queued.state == .queued)
            #expect(queued.bytesReceived == 8192)
            #expect(queued.objectUpload?.parts.count == 2)
            #expect(queued.runAt == fixture.clock.now)
        }

        /// Its staging file holds bytes beyond the committed parts: the download goes on after them.
        @Test func anInterruptedObjectCountsItsStagingFileWhenItHoldsMore() throws {
            try runningWithTwoParts()
            try fixture.writePartial("obj", Array(repeating: 7, count: 10_000))

            try recover()

            let queued = try fixture.job("obj")
            #expect(queued.state == .queued && queued.bytesReceived == 10_000)
            #expect(fixture.partialExists("obj"))
        }

        /// Even a staging file at the destination's path under the download root is no completion:
        /// an object is complete only in the bucket.
        @Test func anInterruptedObjectIsNeverTakenForAPlacedFile() throws {
            try runningWithTwoParts()
            try fixture.writePartial("obj", Array(repeating: 7, count: 8192))
            try FileManager.default.createDirectory(atPath: fixture.files.root, withIntermediateDirectories: true)
            try FileManager.default.linkItem(atPath: fixture.partials.path("obj"), toPath: fixture.files.root + "/big.bin")

            try recover()

            let queued = try fixture.job("obj")
            #expect(queued.state == .queued)
            #expect(try fixture.webhooksDue() == [])
        }
    }
}
