import Crypto
import DownloadCore
import Foundation
import HTTPServer
import Logging
import Persistence
import Transfer

/// The `/downloads` endpoints. Each handler returns its response or throws: an `APIProblem` for
/// what it knows about the request, anything else (a store error) for the router to answer `503`.
///
/// A class: every route's closure holds the handler, and a struct this size (the whole
/// `Configuration`) would be copied into each of them at start.
final class DownloadsAPI: Sendable {
    let store: any JobStore
    let scheduler: Scheduler
    let dispatcher: WebhookDispatcher
    let hub: EventHub
    let events: WebhookEvents
    let files: DestinationFiles
    /// Where uploads' sources are.
    let sources: UploadSources
    let configuration: Configuration
    let clock: Clock
    let ids: IDSource
    let inserts: InsertBatcher
    let writes: WriteQueue

    init(store: any JobStore, scheduler: Scheduler, dispatcher: WebhookDispatcher, hub: EventHub, events: WebhookEvents,
         files: DestinationFiles, sources: UploadSources, configuration: Configuration, clock: Clock, ids: IDSource,
         inserts: InsertBatcher, writes: WriteQueue) {
        self.store = store
        self.scheduler = scheduler
        self.dispatcher = dispatcher
        self.hub = hub
        self.events = events
        self.files = files
        self.sources = sources
        self.configuration = configuration
        self.clock = clock
        self.ids = ids
        self.inserts = inserts
        self.writes = writes
    }

    static let maxIdempotencyKeyLength = 255

    func create(_ request: HTTPRequest, principal: String) async throws -> HTTPResponse {
        let submission = try judge(try Self.jsonBody(request, what: "the job"))
        return try await insertNew(request, principal: principal) {
            try checkDestination(submission, with: DestinationFiles.Checker(files))
            return submission.makeDownload(id: $0, now: $1)
        }
    }

    /// Stores the job `make` makes from an id and the time (after the checks it makes) and answers
    /// `201` with it — or with the job an `Idempotency-Key` already made, without `make`.
    func insertNew(_ request: HTTPRequest, principal: String,
                   _ make: (_ id: String, _ now: Int64) throws -> Download) async throws -> HTTPResponse {
        let idempotency = try Self.idempotency(request, principal: principal)
        if let idempotency, let earlier = try store.idempotentDownload(principal: idempotency.principal, key: idempotency.key) {
            guard earlier.bodySHA256 == idempotency.bodySHA256 else { throw APIProblem.keyMismatch }
            return created201(earlier.download)
        }
        let now = clock.now()
        let download = try make(ids.next(now: now), now)
        // Fails closed: a count that cannot be read throws (503) rather than letting the queue grow past its cap.
        if let maxQueued = configuration.maxQueued, try store.counts()[.queued, default: 0] >= maxQueued {
            throw APIProblem.tooManyRequests("the queue holds its maximum of \(maxQueued) jobs", retryAfterSeconds: 5)
        }
        // Encoded here, on the event loop, not by the store's one writer: the 201 shows these bytes
        // (and PostgreSQL's event log copies them).
        let encoded = DownloadJSON.Unplanned(download)
        switch try await inserts.insert(NewJob(download: download, idempotency: idempotency, statePayload: encoded.bytes)) {
        case .created:
            scheduler.jobStored(runAt: download.runAt)
            return created201(download, encoded: encoded)
        case .replayed(let original):
            return created201(original)
        case .keyMismatch:
            throw APIProblem.keyMismatch
        case .destinationBusy:
            throw APIProblem.destinationBusy
        }
    }

    /// A JSON request body, parsed (`415` when it is not declared JSON, `400` when it is not JSON).
    static func jsonBody(_ request: HTTPRequest, what: String) throws -> JSONValue {
        guard isJSON(request.headers["Content-Type"]) else {
            throw APIProblem.unsupportedMediaType("send \(what) as JSON with Content-Type: application/json")
        }
        do {
            return try JSONParser.parse(request.body)
        } catch {
            throw APIProblem(status: 400, title: "Bad Request", detail: "the body is not valid JSON: \(error)")
        }
    }

    /// The request's `Idempotency-Key` with the digest of its body, if it has one.
    static func idempotency(_ request: HTTPRequest, principal: String) throws -> IdempotencyRecord? {
        guard let rawKey = request.headers["Idempotency-Key"] else { return nil }
        let key = unquoted(rawKey)
        guard !key.isEmpty, key.utf8.count <= maxIdempotencyKeyLength else {
            throw APIProblem.invalid("Idempotency-Key", "must be 1–\(maxIdempotencyKeyLength) characters")
        }
        return IdempotencyRecord(principal: principal, key: key, bodySHA256: SHA256.hash(data: request.body).hex)
    }

    /// A submission's body judged on its own: its fields, and its webhook's address.
    func judge(_ body: JSONValue) throws -> NewDownload {
        var submission: NewDownload
        switch SubmissionValidator.validate(body) {
        case .success(let value): submission = value
        case .failure(let failure): throw APIProblem.invalid(failure.errors)
        }
        submission.connections = submission.connections ?? configuration.connectionsPerDownload
        try vet(submission)
        return submission
    }

    /// What a valid submission must also pass here: its bucket needs object storage, its URLs
    /// the egress policy, an `sftp://` URL known host keys.
    func vet(_ submission: NewDownload) throws {
        if submission.destination.isObject, configuration.objectStorage == nil {
            throw APIProblem.invalid("destination", "names a bucket, but no object storage is configured (FETCHD_S3_ENDPOINT)")
        }
        try checkWebhookAddress(submission.webhookURL)
        try checkAddress(submission.checksumURL, field: "checksumURL")
        try checkHostKeyTrust(submission.url, field: "url")
        for mirror in submission.mirrors { try checkHostKeyTrust(mirror, field: "mirrors") }
    }

    /// An `sftp://` URL needs known host keys (FETCHD_SSH_KNOWN_HOSTS): fetchd never trusts a key
    /// on first use, so without them the job could only fail.
    func checkHostKeyTrust(_ url: String, field: String) throws {
        // Every submission comes here, its URL validated already: the scheme is all that is read.
        guard configuration.network.remoteFiles.knownHosts == nil, HTTPURL.hasScheme("sftp", url) else { return }
        throw APIProblem.invalid(field, "sftp:// needs the server's host key in FETCHD_SSH_KNOWN_HOSTS (keys are never trusted on first use)")
    }

    /// The destination can be written, and holds no file unless the job may overwrite it.
    func checkDestination(_ submission: NewDownload, with checker: DestinationFiles.Checker) throws {
        // An object's conflict is found when its upload starts, and kept by its conditional final write.
        if submission.destination.isObject { return }
        switch checker.check(submission.destination) {
        case .failure(.invalid(let message)):
            throw APIProblem.invalid("destination", message)
        case .failure(let problem):
            throw APIProblem(status: 400, title: "Bad Request", detail: "the destination cannot be used: \(problem)",
                             errors: [FieldError(field: "destination", message: "cannot be used")])
        case .success(true) where !submission.overwrite && !submission.renameOnConflict:
            throw APIProblem.conflict("a file already exists at the destination; set \"overwrite\": true to replace it")
        case .success:
            break
        }
    }

    /// A webhook URL that names an address the egress policy forbids is refused up front.
    func checkWebhookAddress(_ webhookURL: String?) throws {
        try checkAddress(webhookURL, field: "webhookURL")
    }

    /// A URL of `field` that names an address the egress policy forbids is refused up front.
    func checkAddress(_ url: String?, field: String) throws {
        if let url, case .success(let parsed) = HTTPURL.parse(url),
           let address = IPAddress(parsed.host), !configuration.addressPolicy.permits(address) {
            throw APIProblem.invalid(field, "the address \(parsed.host) is not allowed")
        }
    }

    /// `encoded`: the job's bytes already written (it is queued, so no live byte count differs).
    private func created201(_ download: Download, encoded: DownloadJSON.Unplanned? = nil) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.set("Location", "/\(download.direction == .upload ? "uploads" : "downloads")/\(download.id)")
        let body = encoded.map { $0.showing(scheduler.waitingFor(download, load: scheduler.loadSnapshot(), now: clock.now())) }
        return .json(201, body ?? encode(download, liveBytes: nil), headers: headers)
    }

    /// The job of `kind`, or `404` when the store has none (or a job of the other kind: each is
    /// found under its own path only).
    func existing(_ id: String, kind: Direction = .download) throws -> Download {
        guard let download = try store.download(id: id), download.direction == kind else {
            throw APIProblem.notFound("no \(kind.rawValue) with this id")
        }
        return download
    }

    func get(_ id: String, kind: Direction = .download) throws -> HTTPResponse {
        let live = scheduler.liveBytes(of: id)
        return tagged(200, try existing(id, kind: kind), liveBytes: live)
    }

    /// The Download with its strong `ETag` (its revision, which every stored change moves on).
    func tagged(_ status: Int, _ download: Download, liveBytes: Int64?) -> HTTPResponse {
        .json(status, encode(download, liveBytes: liveBytes), headers: HTTPHeaders([("ETag", EntityTag.of(download))]))
    }

    /// `GET /downloads/{id}/attempts`: every attempt so far, oldest first.
    func attempts(_ id: String, kind: Direction = .download) throws -> HTTPResponse {
        _ = try existing(id, kind: kind)
        let records = try store.attempts(of: id)
        var json = JSONWriter(capacity: 200 * records.count + 16)
        json.beginObject()
        json.key("items")
        json.beginArray()
        for record in records {
            json.beginObject()
            json.field("number", record.number)
            json.field("startedAt", date: record.startedAt)
            json.field("endedAt", date: record.endedAt)
            json.field("outcome", record.outcome)
            DownloadJSON.writeError(record.error, into: &json)
            json.field("httpStatus", record.httpStatus)
            json.field("bytesTransferred", record.bytesTransferred)
            json.field("bytesOnDisk", record.bytesOnDisk)
            json.field("url", record.url.map(URLUserInfo.masked))
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return .json(200, json.bytes)
    }

    func list(_ request: HTTPRequest, kind: Direction = .download) throws -> HTTPResponse {
        var errors: [FieldError] = []
        var state: DownloadState?
        if let text = request.query["state"] {
            state = DownloadState(rawValue: text)
            if state == nil { errors.append(FieldError(field: "state", message: "must be one of \(DownloadState.allCases.map(\.rawValue).joined(separator: ", "))")) }
        }
        let session = request.query["session"]
        if let session, !SubmissionValidator.isValidSession(session) {
            errors.append(FieldError(field: "session", message: "is not a valid session name"))
        }
        var limit = 100
        if let text = request.query["limit"] {
            if let value = Int(text), (1...1000).contains(value) { limit = value } else {
                errors.append(FieldError(field: "limit", message: "must be a whole number from 1 to 1000"))
            }
        }
        let cursor = request.query["cursor"]
        if let cursor, cursor.isEmpty || cursor.utf8.count > 64 || !cursor.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            errors.append(FieldError(field: "cursor", message: "is not a cursor this server issued"))
        }
        guard errors.isEmpty else { throw APIProblem.invalid(errors) }
        let live = scheduler.liveProgress()  // before the rows: see `Download.bytesShown(liveBytes:)`
        let page = try store.list(kind: kind, state: state, session: session, limit: limit, cursor: cursor)
        var json = JSONWriter(capacity: 600 * page.items.count + 64)
        let load = scheduler.loadSnapshot()
        let now = clock.now()
        json.beginObject()
        json.key("items")
        json.beginArray()
        for download in page.items {
            write(download, liveBytes: live[download.id]?.bytesReceived, load: load, now: now, into: &json)
        }
        json.endArray()
        json.field("nextCursor", page.nextCursor)
        json.endObject()
        return .json(200, json.bytes)
    }

    func cancel(_ id: String, kind: Direction = .download) async throws -> HTTPResponse {
        try await transition(id, kind: kind, .cancel)
    }

    func pause(_ id: String, kind: Direction = .download) async throws -> HTTPResponse {
        try await transition(id, kind: kind, .pause)
    }

    func resume(_ id: String, kind: Direction = .download) async throws -> HTTPResponse {
        try await transition(id, kind: kind, .resume)
    }

    /// A client-requested transition, as compare-and-set on the job as just read, its revision
    /// (retried on a fresh read if the scheduler wrote the job meanwhile, its progress too: a
    /// pause or resume written from an older copy would undo the ranges an attempt saved), written
    /// off the event loop. A job in a state not in `from` (or `unchangedIn`) is a conflict.
    func transition(_ id: String, kind: Direction, _ transition: ClientTransition) async throws -> HTTPResponse {
        for _ in 0..<10 {
            let live = scheduler.liveBytes(of: id)
            let current = try existing(id, kind: kind)
            if transition.unchangedIn.contains(current.state) { return .json(200, encode(current, liveBytes: live)) }
            guard transition.from.contains(current.state), current.state.canTransition(to: transition.target) else {
                throw APIProblem.conflict("the job is \(current.state.rawValue) and cannot become \(transition.target.rawValue) this way")
            }
            let now = clock.now()
            let updated = transition.applied(to: current, now: now)
            let committed: Bool
            do {
                committed = try await writes.perform { [self] in try store.apply([transitionWrite(current, as: updated, now: now)])[0] }
            } catch is DestinationBusy {
                throw APIProblem.conflict("another live job writes to this job's destination now")
            }
            if committed {
                announce(updated, liveBytes: live)
                transition.committed(scheduler, updated)
                return .json(200, encode(updated, liveBytes: live))
            }
        }
        throw APIProblem.unavailable("the job kept changing; try again")
    }

    /// The write of a client's transition from `current` to `updated`: compare-and-set on the
    /// state and on the revision read. A terminal state records the job's webhook event (and
    /// `session.finished` when it ends its session's last live job); a watch's check records
    /// none: its watch speaks for it.
    func transitionWrite(_ current: Download, as updated: Download, now: Int64) -> StoreChange {
        let events = events
        let sessionFinished: ((SessionSnapshot) -> [WebhookEvent])? = updated.watch == nil ? { [events.sessionFinished($0, now: now)] } : nil
        return .update(updated, expecting: [current.state], events: updated.state.isTerminal ? events.ended(updated, now: now) : [],
                       sessionFinished: sessionFinished, unchangedSince: current.revision)
    }

    /// Tells the webhook dispatcher and the event streams of a committed transition.
    func announce(_ updated: Download, liveBytes: Int64?) {
        if updated.state.isTerminal, updated.watch == nil { dispatcher.poke() }
        hub.publish(updated.id, .state(updated.showing(liveBytes: liveBytes)))
    }

    // MARK: - Presentation

    /// `liveBytes`: from `Scheduler.liveBytes(of:)`, read before `download` was.
    func encode(_ download: Download, liveBytes: Int64?) -> [UInt8] {
        var json = JSONWriter()
        write(download, liveBytes: liveBytes, load: scheduler.loadSnapshot(), now: clock.now(), into: &json)
        return json.bytes
    }

    /// A state event's job (`Download.showing(liveBytes:)` when it was read), with what its attempt
    /// reports as the event is written if it still runs.
    func encodeForEvent(_ download: Download) -> [UInt8] {
        encode(download, liveBytes: scheduler.liveBytes(of: download.id))
    }

    private func write(_ download: Download, liveBytes: Int64?, load: Load, now: Int64, into json: inout JSONWriter) {
        DownloadJSON.write(download, waitingFor: scheduler.waitingFor(download, load: load, now: now), liveBytes: liveBytes, into: &json)
    }

    /// `application/json`, in any case, with or without parameters (`; charset=utf-8`). Compared
    /// in bytes: this runs for every POST.
    static func isJSON(_ contentType: String?) -> Bool {
        isMediaType(contentType, "application/json")
    }

    static func isMediaType(_ contentType: String?, _ expected: String) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.utf8.prefix { $0 != UInt8(ascii: ";") }
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let trimmed = mediaType.drop(while: isBlank).reversed().drop(while: isBlank).reversed()
        return trimmed.lazy.map(\.asciiLowercased).elementsEqual(expected.utf8)
    }

    /// `"abc"` and `abc` are the same key.
    static func unquoted(_ text: String) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.count >= 2, trimmed.hasPrefix("\""), trimmed.hasSuffix("\"") { return String(trimmed.dropFirst().dropLast()) }
        return trimmed
    }
}
