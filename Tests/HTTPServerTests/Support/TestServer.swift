import Dispatch
@testable import HTTPServer
import Logging
import Synchronization

let quietLogger = Logger(label: "http-server-tests") { _ in SwiftLogNoOpLogHandler() }

/// A server on a free loopback port with `routes`; stopped when `body` returns or throws.
func withServer(
    configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    routes: (inout Router) -> Void = { _ in },
    _ body: (HTTPServer, Int) async throws -> Void
) async throws {
    var configuration = HTTPServerConfiguration()
    configuration.port = 0
    // Minutes, not the defaults' seconds, unless a test sets its own: with every suite in one
    // run, the two-thread cooperative pool can take over 30 s to resume a client's task between
    // two sends or reads, and a server that timed the client out would fail a test of something else.
    configuration.headReadTimeout = 600
    configuration.bodyReadTimeout = 600
    configuration.writeTimeout = 600
    configuration.idleTimeout = 600
    configure(&configuration)
    var router = Router()
    router.add("GET", "/hello") { _, _ in .json(200, Array(#"{"hello":"world"}"#.utf8)) }
    router.add("POST", "/echo") { request, _ in HTTPResponse(status: 200, body: .bytes(request.body)) }
    routes(&router)
    let server = HTTPServer(configuration: configuration, router: router, logger: quietLogger)
    let port = try server.start()
    do {
        try await body(server, port)
    } catch {
        await server.shutdown(timeout: 1)
        throw error
    }
    await server.shutdown(timeout: 1)
}

/// A one-shot signal that tasks can wait for.
final class Gate: Sendable {
    private let state = Mutex<(isOpen: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    var isOpen: Bool { state.withLock { $0.isOpen } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let proceed = state.withLock { state in
                if state.isOpen { return true }
                state.waiters.append(continuation)
                return false
            }
            if proceed { continuation.resume() }
        }
    }
}

func request(_ method: String = "GET", _ target: String, headers: [String] = [], body: String = "") -> String {
    var text = "\(method) \(target) HTTP/1.1\r\nHost: test\r\n"
    for header in headers { text += header + "\r\n" }
    if !body.isEmpty { text += "Content-Length: \(body.utf8.count)\r\n" }
    return text + "\r\n" + body
}

/// Runs the tasks that prefer it one at a time on a dispatch queue of its own, which always gets
/// a thread: for test steps that race a deadline of the server's, which the cooperative pool could
/// hold up for seconds while other suites keep its few threads busy.
final class QueueExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "http-server-tests.executor")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
