import Dispatch
@testable import DownloadService
import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport

/// A bound Unix datagram socket standing in for the service manager: collects what arrives.
private final class ManagerSocket: Sendable {
    let name: String
    private let fd: Int32
    private let received = Mutex<[String]>([])
    private let reader = DispatchQueue(label: "manager-socket")

    /// An abstract name, so that nothing is left on disk.
    init() throws {
        name = "@fetchd-notify-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = [0] + Array(name.utf8.dropFirst())
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard fd >= 0, bound == 0 else { throw NotifySocket.Invalid(description: "cannot bind \(name)") }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        reader.async { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count > 0 { received.withLock { $0.append(String(decoding: buffer[..<count], as: UTF8.self)) } }
                if count == 0 || (count < 0 && errno == EBADF) { return }
            }
        }
    }

    var messages: [String] { received.withLock { $0 } }
    func count(_ prefix: String) -> Int { messages.filter { $0.hasPrefix(prefix) }.count }

    func close() { shutdown(fd, Int32(SHUT_RDWR)); Glibc.close(fd) }
}

@Suite struct ServiceNotifierTests {
    @Test func withoutNotifySocketThereIsNoNotifier() throws {
        #expect(try ServiceNotifier(environment: [:]) { ServiceHealth(alive: true, status: "") } == nil)
    }

    @Test(arguments: [
        (["NOTIFY_SOCKET": "relative"], "NOTIFY_SOCKET=relative: expected an absolute path or an @abstract name"),
        (["NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "0"], "WATCHDOG_USEC=0: expected a positive number of microseconds"),
    ])
    func badVariablesAreNamed(_ environment: [String: String], _ message: String) {
        #expect {
            try ServiceNotifier(environment: environment) { ServiceHealth(alive: true, status: "") }
        } throws: { "\($0)" == message }
    }

    @Test func theWatchdogIsHalfTheIntervalAndOnlyForThisProcess() throws {
        #expect(try ServiceNotifier.watchdogTick(environment: ["WATCHDOG_USEC": "3000000"], processID: 7) == .milliseconds(1500))
        #expect(try ServiceNotifier.watchdogTick(environment: ["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "8"], processID: 7) == nil)
        #expect(try ServiceNotifier.watchdogTick(environment: [:], processID: 7) == nil)
    }

    @Test func readyThenPingsWhileAliveAndNoneWhileTheProbeHangs() async throws {
        let manager = try ManagerSocket()
        defer { manager.close() }
        let health = Mutex(ServiceHealth(alive: true, status: "running 1, queued 2"))
        let gate = DispatchSemaphore(value: 1)
        let notifier = try #require(try ServiceNotifier(environment: ["NOTIFY_SOCKET": manager.name, "WATCHDOG_USEC": "40000"]) {
            gate.wait()
            gate.signal()
            return health.withLock { $0 }
        })
        notifier.ready(status: "listening on 127.0.0.1:1")
        #expect(await eventually { manager.count("WATCHDOG=1\nSTATUS=running 1, queued 2") >= 3 })
        #expect(manager.messages.first == "READY=1\nSTATUS=listening on 127.0.0.1:1\nMAINPID=\(getpid())")

        health.withLock { $0 = ServiceHealth(alive: false, status: "the database is not writable") }
        #expect(await eventually { manager.count("STATUS=the database is not writable") >= 2 })

        health.withLock { $0.alive = true }
        gate.wait()  // the probe now hangs
        let pings = manager.count("WATCHDOG=1")
        #expect(await !eventually(within: .milliseconds(300)) { manager.count("WATCHDOG=1") > pings + 1 })
        gate.signal()
        #expect(await eventually { manager.count("WATCHDOG=1") > pings + 2 })

        notifier.stopping()
        #expect(await eventually { manager.messages.contains("STOPPING=1\nSTATUS=stopping") })
    }
}
