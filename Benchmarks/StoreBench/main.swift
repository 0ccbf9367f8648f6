import DownloadCore
import Foundation
import Persistence
import PostgresStore
import Synchronization

// Claim + settle at the queue level: the real PostgresStore's claim pass and
// settlement calls, as fetchd's scheduler makes them, from several "nodes" (each a store with its
// own connections and node name) on one database, with no transfers between claim and settle.
//
//     fetchd-store-bench URL [--nodes 3] [--jobs 20000] [--slots 32] [--hosts 30]
//     fetchd-store-bench URL --soak SECONDS [--rate 1000] [--nodes 3] [--slots 32]
//
// The first form queues `--jobs` due jobs, then every node claims up to `--slots` at a time and
// settles what it claimed as completed in one `apply`, until the queue is empty; it prints one
// JSON line: jobs/s, and claim and settle p50/p99. `--soak` submits `--rate` jobs a second while
// the nodes drain them, and prints a JSON line each minute with that minute's claim p50/p99.

struct Options {
    var url = ""
    var nodes = 3
    var jobs = 20_000
    var slots = 32
    var hosts = 30
    var soakSeconds: Int?
    var rate = 1_000

    static func parse(_ arguments: [String]) -> Options? {
        var options = Options()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if !argument.hasPrefix("--") { options.url = argument; continue }
            guard let value = rest.popFirst().flatMap(Int.init), value > 0 else { return nil }
            switch argument {
            case "--nodes": options.nodes = value
            case "--jobs": options.jobs = value
            case "--slots": options.slots = value
            case "--hosts": options.hosts = value
            case "--soak": options.soakSeconds = value
            case "--rate": options.rate = value
            default: return nil
            }
        }
        return options.url.isEmpty ? nil : options
    }
}

func milliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

/// Call durations in seconds, kept per interval so the soak can report each minute on its own.
final class Durations: Sendable {
    private let samples = Mutex<(claim: [Double], settle: [Double])>(([], []))

    func add(claim: Double? = nil, settle: Double? = nil) {
        samples.withLock {
            if let claim { $0.claim.append(claim) }
            if let settle { $0.settle.append(settle) }
        }
    }

    /// The samples so far, and a fresh start.
    func take() -> (claim: [Double], settle: [Double]) {
        samples.withLock { current in
            defer { current = ([], []) }
            return current
        }
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))] * 1000
    }
}

/// Jobs settled by every node so far.
final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

/// `count` queued jobs for `hosts` loopback ports, due now, in one session, as intake stores them.
func newJobs(_ count: Int, hosts: Int, prefix: String) -> [NewJob] {
    let now = milliseconds()
    return (0..<count).map { index in
        let port = 20_000 + index % hosts
        var submission = NewDownload(url: "http://127.0.0.1:\(port)/files/t\(index % hosts).bin",
                                     parsedURL: HTTPURL(scheme: "http", host: "127.0.0.1", port: port),
                                     destination: Destination(stored: "w/\(prefix)-\(index).bin"))
        submission.session = "bench"
        return NewJob(download: submission.makeDownload(id: String(format: "%@-%08d", prefix, index), now: now), idempotency: nil)
    }
}

/// One node's scheduler loop without transfers: a claim pass for its free slots (the candidate
/// limit and per-host exclusion as fetchd's scheduler asks them), then the claimed jobs settled
/// as completed in one `apply`, as fetchd commits a burst of settlements.
func drive(_ store: PostgresStore, slots: Int, perHost: Int, durations: Durations, settled total: Counter,
           done: @escaping () -> Bool) throws -> Int {
    var settled = 0
    var idlePasses = 0
    while !done() {
        var running = 0
        var byHost: [String: Int] = [:]
        var elsewhere: [String: Int] = [:]
        let now = milliseconds()
        var pass = ClaimPass(
            now: now, agedBefore: now, agingDelay: 0,
            candidates: { _ in
                let free = slots - running
                guard free > 0 else { return nil }
                let full = byHost.merging(elsewhere, uniquingKeysWith: +).filter { $0.value >= perHost }.map(\.key)
                return (limit: free * 2 + 8, excludingHosts: full)
            },
            choose: { candidate in
                guard running < slots, byHost[candidate.hostKey, default: 0] + elsewhere[candidate.hostKey, default: 0] < perHost else { return nil }
                running += 1
                byHost[candidate.hostKey, default: 0] += 1
                return candidate.startingAttempt(now: now)
            })
        pass.otherNodesRunning = { elsewhere = $0 }
        let claimStart = DispatchTime.now().uptimeNanoseconds
        let claimed = try store.claim(pass).claimed
        durations.add(claim: Double(DispatchTime.now().uptimeNanoseconds - claimStart) / 1e9)
        guard !claimed.isEmpty else {
            idlePasses += 1
            // An empty queue: wait as a node would for the next NOTIFY or poll.
            usleep(idlePasses > 3 ? 20_000 : 2_000)
            continue
        }
        idlePasses = 0
        let finished = milliseconds()
        let changes = claimed.map { job -> StoreChange in
            var done = job
            done.state = .completed
            done.bytesReceived = 512
            done.sha256 = String(repeating: "ab", count: 32)
            done.finishedAt = finished
            let attempt = AttemptRecord(number: done.attempts, startedAt: now, endedAt: finished, outcome: "completed", error: nil,
                                        httpStatus: 200, bytesTransferred: 512, bytesOnDisk: 512, url: job.url)
            return .update(done, expecting: [.running], events: [], attempt: attempt) { _ in [] }
        }
        let settleStart = DispatchTime.now().uptimeNanoseconds
        let results = try store.apply(changes)
        durations.add(settle: Double(DispatchTime.now().uptimeNanoseconds - settleStart) / 1e9)
        settled += results.filter { $0 }.count
        total.value.add(results.filter { $0 }.count, ordering: .relaxed)
    }
    return settled
}

/// fetchd's event-log payload is the job's JSON, about this long.
let payload: @Sendable (Download) -> [UInt8] = { Array("{\"id\":\"\($0.id)\",\"state\":\"\($0.state.rawValue)\"}".utf8) + [UInt8](repeating: 0x20, count: 560) }

func json(_ fields: [(String, Any)]) -> String {
    "{" + fields.map { key, value in
        if let number = value as? Double { return "\"\(key)\": \(String(format: "%.2f", number))" }
        return "\"\(key)\": \(value)"
    }.joined(separator: ", ") + "}"
}

/// One line on standard output, written at once (the soak's reader follows it minute by minute).
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Each store drives its node on a thread of its own until `done`; the group ends when all have.
func driveNodes(_ stores: [PostgresStore], _ options: Options, durations: Durations, settled: Counter,
                until done: @escaping @Sendable () -> Bool) -> DispatchGroup {
    let group = DispatchGroup()
    for (index, store) in stores.enumerated() {
        DispatchQueue.global().async(group: group) {
            do {
                _ = try drive(store, slots: options.slots, perHost: options.slots, durations: durations, settled: settled, done: done)
            } catch {
                FileHandle.standardError.write(Data("node \(index): \(error)\n".utf8))
                exit(1)
            }
        }
    }
    return group
}

func run(_ options: Options) throws {
    let stores = try (0..<options.nodes).map { try PostgresStore(url: options.url, readers: 1, node: "bench-\($0)", statePayload: payload) }
    defer { stores.forEach { $0.close() } }
    let durations = Durations()
    if let soakSeconds = options.soakSeconds {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(soakSeconds) * 1_000_000_000
        let stop = Atomic<Bool>(false)
        let submitted = Atomic<Int>(0)
        let settledTotal = Counter()
        let group = driveNodes(stores, options, durations: durations, settled: settledTotal) { stop.load(ordering: .relaxed) }
        // Submitted in 20 batches a second through a store of its own, so the rate holds while the
        // nodes' writers are busy claiming (a node's intake shares its writer).
        let intake = try PostgresStore(url: options.url, readers: 1, node: "bench-intake", statePayload: payload)
        defer { intake.close() }
        let batch = max(1, options.rate / 20)
        var minuteStart = DispatchTime.now().uptimeNanoseconds
        var minute = 0
        var tick = DispatchTime.now().uptimeNanoseconds
        while DispatchTime.now().uptimeNanoseconds < deadline {
            let count = submitted.load(ordering: .relaxed)
            _ = try intake.insert(newJobs(batch, hosts: options.hosts, prefix: "s\(count / batch)"))
            submitted.add(batch, ordering: .relaxed)
            tick += 50_000_000
            let now = DispatchTime.now().uptimeNanoseconds
            if tick > now { usleep(UInt32((tick - now) / 1000)) }
            if DispatchTime.now().uptimeNanoseconds - minuteStart >= 60_000_000_000 || DispatchTime.now().uptimeNanoseconds >= deadline {
                minute += 1
                let (claims, settles) = durations.take()
                emit(json([("minute", minute), ("submitted", submitted.load(ordering: .relaxed)),
                           ("settled", settledTotal.value.load(ordering: .relaxed)),
                            ("claims", claims.count), ("claim_p50_ms", Durations.percentile(claims, 0.5)),
                            ("claim_p99_ms", Durations.percentile(claims, 0.99)), ("settle_p99_ms", Durations.percentile(settles, 0.99))]))
                minuteStart = DispatchTime.now().uptimeNanoseconds
            }
        }
        stop.store(true, ordering: .relaxed)
        group.wait()
        emit(json([("done", "true"), ("submitted", submitted.load(ordering: .relaxed)), ("settled", settledTotal.value.load(ordering: .relaxed))]))
        return
    }
    for start in stride(from: 0, to: options.jobs, by: 1_000) {
        let jobs = newJobs(min(1_000, options.jobs - start), hosts: options.hosts, prefix: "b\(start / 1_000)")
        _ = try stores[0].insert(jobs)
    }
    // The driver measures the server's CPU from this line to the result.
    emit(json([("queued", options.jobs)]))
    let settledTotal = Counter()
    let started = DispatchTime.now().uptimeNanoseconds
    let cpuStarted = cpuSeconds()
    // The nodes stop when every job is settled.
    let group = driveNodes(stores, options, durations: durations, settled: settledTotal) {
        settledTotal.value.load(ordering: .relaxed) >= options.jobs
    }
    group.wait()
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    let (claims, settles) = durations.take()
    emit(json([("nodes", options.nodes), ("jobs", options.jobs), ("seconds", seconds), ("jobs_per_s", Double(options.jobs) / seconds),
                ("claims", claims.count), ("claim_p50_ms", Durations.percentile(claims, 0.5)), ("claim_p99_ms", Durations.percentile(claims, 0.99)),
                ("settle_p50_ms", Durations.percentile(settles, 0.5)), ("settle_p99_ms", Durations.percentile(settles, 0.99)),
                ("cpu_s", cpuSeconds() - cpuStarted)]))
}

/// This process's user + system CPU so far.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

guard let options = Options.parse(Array(CommandLine.arguments.dropFirst())) else {
    FileHandle.standardError.write(Data("usage: fetchd-store-bench URL [--nodes N] [--jobs N] [--slots N] [--hosts N] [--soak SECONDS] [--rate N]\n".utf8))
    exit(2)
}
do {
    try run(options)
} catch {
    FileHandle.standardError.write(Data("fetchd-store-bench: \(error)\n".utf8))
    exit(1)
}
