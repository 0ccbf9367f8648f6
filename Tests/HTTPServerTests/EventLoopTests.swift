@testable import HTTPServer
import Glibc
import Synchronization
import Testing
import TestSupport

/// The loop on its own, with a pipe standing in for a socket.
@Suite struct EventLoopTests {
    /// Records the events a loop delivers for one descriptor.
    private final class Recorder: EventLoopHandler, Sendable {
        let reads = Mutex(0)
        let ticks = Mutex(0)
        func readable() { reads.withLock { $0 += 1 } }
        func writable() {}
        func tick() { ticks.withLock { $0 += 1 } }
    }

    /// What each sender's jobs recorded, in the order they ran.
    private final class Log: Sendable {
        let entries = Mutex<[Int: [Int]]>([:])
    }

    private static func pipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        try #require(Glibc.pipe(&fds) == 0)
        return (fds[0], fds[1])
    }

    @Test func jobsFromManyThreadsRunOneAtATimeInTheOrderEachSent() async throws {
        let loop = try EventLoop(tickInterval: 1)
        try loop.start()
        defer { loop.stop() }
        let log = Log()
        await withTaskGroup(of: Void.self) { group in
            for sender in 0..<4 {
                group.addTask {
                    for n in 0..<1000 { loop.execute { log.entries.withLock { $0[sender, default: []].append(n) } } }
                }
            }
        }
        #expect(await eventually { log.entries.withLock { $0.values.map(\.count).reduce(0, +) } == 4000 })
        #expect(log.entries.withLock { $0.values.allSatisfy { $0 == Array(0..<1000) } })
    }

    @Test func readableIsDeliveredOnlyWhileWanted() async throws {
        let loop = try EventLoop(tickInterval: 0.01)
        try loop.start()
        defer { loop.stop() }
        let (readEnd, writeEnd) = try Self.pipe()
        defer { close(readEnd); close(writeEnd) }
        let recorder = Recorder()
        loop.execute { loop.register(readEnd, recorder) }
        var byte: UInt8 = 1
        #expect(write(writeEnd, &byte, 1) == 1)
        // Registered, ticking, but not wanting to read: the waiting byte is not reported.
        #expect(await eventually { recorder.ticks.withLock { $0 } >= 3 })
        #expect(recorder.reads.withLock { $0 } == 0)
        loop.execute { loop.want(readEnd, reading: true) }
        #expect(await eventually { recorder.reads.withLock { $0 } > 0 })
        let deregistered = Gate()
        loop.execute {
            loop.deregister(readEnd)
            deregistered.open()
        }
        await deregistered.wait()
    }

    /// Its state may be used on the loop's thread and, once it has stopped, on the queue that runs
    /// the jobs sent after; debug builds stop the process anywhere else.
    @Test func theLoopsStateIsUsedOnlyOnItsThreadOrAfterItStopped() async throws {
        let loop = try EventLoop(tickInterval: 1)
        try loop.start()
        let ranOnLoop = Gate()
        loop.execute {
            loop.assertInLoop()
            ranOnLoop.open()
        }
        await ranOnLoop.wait()
        loop.stop()
        let ranAfterStop = Gate()
        loop.execute {
            loop.assertInLoop()
            ranAfterStop.open()
        }
        await ranAfterStop.wait()
        #if DEBUG
        await #expect(processExitsWith: .failure) {
            let loop = try EventLoop(tickInterval: 1)
            try loop.start()
            loop.assertInLoop()
        }
        #endif
    }

    @Test func jobsSentAroundStopAllRunInOrder() async throws {
        let loop = try EventLoop(tickInterval: 1)
        try loop.start()
        let log = Log()
        for n in 0..<2000 {
            // Some run on the loop, the rest after it stopped: none may be lost or overtaken.
            if n == 1000 { loop.stop() }
            loop.execute { log.entries.withLock { $0[0, default: []].append(n) } }
        }
        #expect(await eventually { log.entries.withLock { $0[0]?.count } == 2000 })
        #expect(log.entries.withLock { $0[0] } == Array(0..<2000))
    }
}
