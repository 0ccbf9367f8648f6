// Drives fetchd's main calls through the client that swift-openapi-generator made from
// openapi.yaml, with its default configuration and the URLSession transport, as a new user
// would. Every response must decode; any surprise ends the program with exit code 1.
//
//   FetchdClientCheck <fetchd URL> <URL of a small file> <URL of a slow file> <URL that is 404>
import Foundation
import OpenAPIRuntime
import OpenAPIURLSession

struct CheckFailed: Error, CustomStringConvertible {
    var description: String
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw CheckFailed(description: message()) }
}

typealias Download = Components.Schemas.Download

let arguments = CommandLine.arguments
guard arguments.count == 5, let serverURL = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: FetchdClientCheck <fetchd URL> <small URL> <slow URL> <404 URL>\n".utf8))
    exit(2)
}
let (smallURL, slowURL, missingURL) = (arguments[2], arguments[3], arguments[4])
let client = Client(serverURL: serverURL, transport: URLSessionTransport())
let session = "swift-client"

func create(_ url: String, _ destination: String) async throws -> Download {
    let body = Components.Schemas.DownloadRequest(url: url, destination: destination, session: session)
    return try await client.createDownload(body: .json(body)).created.body.json
}

func get(_ id: String) async throws -> Download {
    try await client.getDownload(path: .init(id: id)).ok.body.json
}

/// Polls the job until `done` holds (fetchd has no long-poll; the events stream is the push way).
func waitFor(_ id: String, _ what: String, _ done: (Download) -> Bool) async throws -> Download {
    let deadline = Date().addingTimeInterval(20)
    while true {
        let job = try await get(id)
        if done(job) { return job }
        try check(Date() < deadline, "job \(id) never became \(what); last state \(job.state)")
        try await Task.sleep(for: .milliseconds(50))
    }
}

func run() async throws {
    // Create and get: dates decode with the runtime's default ISO 8601 transcoder.
    let small = try await create(smallURL, "swift/small.bin")
    try check(small.session == session && small.overwrite == false, "created job echoes its request: \(small)")
    let done = try await waitFor(small.id, "completed") { $0.state == .completed }
    try check(done.error == nil && done.finishedAt != nil && done.finishedAt! >= done.createdAt, "completed job: \(done)")
    print("create, get: \(done.id) completed at \(done.finishedAt!)")

    // A failed job: its error and its attempts decode, with a known error code.
    let missing = try await create(missingURL, "swift/missing.bin")
    let failed = try await waitFor(missing.id, "failed") { $0.state == .failed }
    try check(failed.error?.code.value1 == .http_status && failed.httpStatus == 404, "failed job: \(failed)")
    let attempts = try await client.listDownloadAttempts(path: .init(id: failed.id)).ok.body.json.items
    try check(attempts.last?.error?.code.value1 == .http_status && attempts.last?.outcome == .failed, "attempts: \(attempts)")
    print("failed job: error.code \(failed.error!.code.value1!.rawValue), \(attempts.count) attempt(s)")

    // Pause, resume and cancel a slow download.
    let slow = try await create(slowURL, "swift/slow.bin")
    _ = try await waitFor(slow.id, "running") { $0.state == .running }
    let paused = try await client.pauseDownload(path: .init(id: slow.id)).ok.body.json
    try check(paused.state == .paused, "pause: \(paused.state)")
    let resumed = try await client.resumeDownload(path: .init(id: slow.id)).ok.body.json
    try check(resumed.state == .queued || resumed.state == .running, "resume: \(resumed.state)")
    let cancelled = try await client.cancelDownload(path: .init(id: slow.id)).ok.body.json
    try check(cancelled.state == .cancelled && cancelled.waitingFor == nil, "cancel: \(cancelled)")
    print("pause, resume, cancel: \(paused.state), \(resumed.state), \(cancelled.state)")

    // List with a cursor: one job a page, newest first, until nextCursor is null.
    var ids: [String] = []
    var cursor: String?
    repeat {
        let page = try await client.listDownloads(query: .init(session: session, limit: 1, cursor: cursor)).ok.body.json
        ids += page.items.map(\.id)
        cursor = page.nextCursor
    } while cursor != nil && ids.count < 10
    try check(ids == [slow.id, missing.id, small.id], "pages: \(ids)")
    print("list: \(ids.count) pages of one")

    // The session's summary.
    let summary = try await client.getSession(path: .init(session: session)).ok.body.json
    try check(summary.counts.completed == 1 && summary.counts.failed == 1 && summary.counts.cancelled == 1 && summary.finished,
              "session: \(summary)")
    print("session: finished \(summary.finished)")

    // A 400 problem decodes, with the offending field.
    let bad = try await client.createDownload(body: .json(.init(url: smallURL, destination: "../outside")))
    let problem = try bad.badRequest.body.application_problem_plus_json
    try check(problem.status == 400 && problem.errors?.first?.field == "destination", "problem: \(problem)")
    print("400 problem: \(problem.errors!.first!.field): \(problem.errors!.first!.message)")
    print("all calls decoded")
}

do {
    try await run()
} catch {
    FileHandle.standardError.write(Data("FAILED: \(error)\n".utf8))
    exit(1)
}
