import DownloadCore
import HTTPServer
import Persistence

/// The `/watches` endpoints. A watch's check is a job of `/downloads`: pausing, resuming or
/// deleting a watch does the same to its live check, through the download endpoints' own code.
struct WatchesAPI: Sendable {
    /// The download endpoints: a watch's checks are their jobs, kept in the same store, scheduled by
    /// the same scheduler, under the same settings, clock and ids.
    let downloads: DownloadsAPI
    let writes: WriteQueue

    var store: any JobStore { downloads.store }
    var scheduler: Scheduler { downloads.scheduler }
    var configuration: Configuration { downloads.configuration }
    var clock: Clock { downloads.clock }
    var ids: IDSource { downloads.ids }

    func create(_ request: HTTPRequest, principal: String) async throws -> HTTPResponse {
        let spec = try judge(try DownloadsAPI.jsonBody(request, what: "the watch"))
        try downloads.checkDestination(spec.download, with: DestinationFiles.Checker(downloads.files))
        let idempotency = try DownloadsAPI.idempotency(request, principal: principal)
        // Fails closed, as the queue's cap does: a count that cannot be read is a 503.
        if try store.watchCount() >= configuration.maxWatches {
            throw APIProblem.tooManyRequests("fetchd keeps its maximum of \(configuration.maxWatches) watches (FETCHD_MAX_WATCHES)",
                                             retryAfterSeconds: 60)
        }
        let now = clock.now()
        var watch = Watch(id: ids.next(now: now), spec: spec.fields, destination: spec.download.destination, createdAt: now)
        watch.nextCheckAt = now
        watch.revision = 1
        guard let firstCheck = WatchChecks.check(of: watch, id: ids.next(now: now), runAt: now, now: now) else {
            throw APIProblem.invalid("", "the watch's fields do not make a download")
        }
        watch.checkID = firstCheck.id
        let (store, stored) = (store, watch)
        switch try await writes.perform({ try store.insertWatch(stored, firstCheck: firstCheck, idempotency: idempotency) }) {
        case .created:
            scheduler.jobStored(runAt: now)
            return tagged(201, watch, location: true)
        case .replayed(let original):
            return tagged(201, original, location: true)
        case .keyMismatch:
            throw APIProblem.keyMismatch
        case .destinationBusy:
            throw APIProblem.conflict("another watch or a live job already writes to this destination")
        }
    }

    /// A watch's fields judged on their own, and as a download's would be.
    private func judge(_ body: JSONValue) throws -> WatchSpec {
        switch WatchSpec.validate(body, minInterval: configuration.watchMinInterval.wholeMilliseconds) {
        case .success(let spec):
            try downloads.vet(spec.download)
            return spec
        case .failure(let failure):
            throw APIProblem.invalid(failure.errors)
        }
    }

    func get(_ id: String) throws -> HTTPResponse {
        tagged(200, try existing(id))
    }

    func list(_ request: HTTPRequest) throws -> HTTPResponse {
        var limit = 100
        if let text = request.query["limit"] {
            guard let value = Int(text), (1...1000).contains(value) else { throw APIProblem.invalid("limit", "must be a whole number from 1 to 1000") }
            limit = value
        }
        let cursor = request.query["cursor"]
        if let cursor, cursor.isEmpty || cursor.utf8.count > 64 || !cursor.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            throw APIProblem.invalid("cursor", "is not a cursor this server issued")
        }
        let page = try store.watches(limit: limit, cursor: cursor)
        var json = JSONWriter(capacity: 800 * page.items.count + 64)
        json.beginObject()
        json.key("items")
        json.beginArray()
        for watch in page.items { WatchJSON.write(watch, into: &json) }
        json.endArray()
        json.field("nextCursor", page.nextCursor)
        json.endObject()
        return .json(200, json.bytes)
    }

    /// A JSON merge patch of any field but `destination`. New download fields replace the live
    /// check with one made from them, due when it was (a running one starts again), in the same
    /// transaction as the watch; a new `interval` or `schedule` alone moves the queued check.
    func patch(_ id: String, _ request: HTTPRequest) async throws -> HTTPResponse {
        guard case .object(let patch) = try DownloadsAPI.mergePatch(request) else {
            throw APIProblem.invalid("", "the body must be a JSON object (a merge patch)")
        }
        if let fixed = patch.keys.first(where: WatchSpec.fixedFields.contains) {
            throw APIProblem.invalid(fixed, "cannot be changed after the watch is created")
        }
        let ifMatch = request.headers["If-Match"]
        let patched = { (current: Watch) in try judge(.object(WatchSpec.patched(current.spec, with: patch))) }
        do {
            // Judged against each revision read, so that a concurrent PATCH of the download
            // fields cannot slip past the check that must follow them.
            return tagged(200, try await steer(id, ifMatch: ifMatch) { current, now in
                let spec = try patched(current)
                guard spec.download == current.validSpec?.download else { throw DownloadFieldsChanged() }
                return { watch in Self.take(spec, into: &watch, now: now) ? watch.nextCheckAt : nil }
            })
        } catch is DownloadFieldsChanged {
            _ = try await changeWithCheck(id, .cancel, ifMatch: ifMatch, replacingCheck: true) { current, now in
                let spec = try patched(current)
                return { watch in Self.take(spec, into: &watch, now: now) }
            }
            return tagged(200, try existing(id))
        }
    }

    /// A PATCH that changes what the check asks, so that it must replace the live check.
    private struct DownloadFieldsChanged: Error {}

    /// The watch was written since it was read: nothing of the change may be written.
    private struct WatchMoved: Error {}

    /// The watch with `spec` as its fields, its next time moved if the timing changed (returned).
    @discardableResult
    private static func take(_ spec: WatchSpec, into watch: inout Watch, now: Int64) -> Bool {
        let timingChanged = watch.validSpec?.timing != spec.timing
        watch.spec = spec.fields
        if timingChanged { watch.nextCheckAt = watch.nextCheck(after: watch.lastCheckedAt ?? now).map { max($0, now) } }
        return timingChanged
    }

    /// `POST /watches/{id}/check`: the queued check runs now (a running one goes on).
    func checkNow(_ id: String) async throws -> HTTPResponse {
        let watch = try await steer(id) { current, now in
            guard current.state == .active else { throw APIProblem.conflict("the watch is paused; resume it first") }
            return { watch in
                watch.nextCheckAt = now
                return now
            }
        }
        if let due = watch.nextCheckAt { scheduler.jobStored(runAt: due) }
        return tagged(200, watch)
    }

    func pause(_ id: String) async throws -> HTTPResponse {
        _ = try await changeWithCheck(id, .pause) { _, _ in { watch in watch.state = .paused } }
        return tagged(200, try existing(id))
    }

    /// Resumed, the watch checks at its next time, or at once if that passed while it was paused.
    func resume(_ id: String) async throws -> HTTPResponse {
        _ = try await changeWithCheck(id, .resume) { _, now in
            { watch in
                watch.state = .active
                watch.nextCheckAt = max(now, watch.nextCheckAt ?? now)
            }
        }
        return tagged(200, try existing(id))
    }

    /// Stops the watch and cancels its live check; the file stays.
    func delete(_ id: String) async throws -> HTTPResponse {
        tagged(200, try await changeWithCheck(id, .cancel, deleting: true))
    }

    /// Changes the watch (with `deleting`, removes it) and makes the same `transition` of its live
    /// check, in one transaction, so that no crash leaves the two apart: a paused watch whose check
    /// runs on, an active one whose check stays paused for ever, a check without its watch, a
    /// check asking what the watch no longer does. `prepare` judges the watch as read (throwing
    /// what a client gets; `If-Match`, when given, must name it) and gives the change; with
    /// `replacingCheck`, the check the transition ended is followed by one made from the watch as
    /// changed. The watch is written only as it was read (its revision: a check that ended
    /// meanwhile made the next) and only with its check's transition, where the check was in a
    /// state to make it; neither is written otherwise, and both are read again. Returns the
    /// watch as read.
    private func changeWithCheck(_ id: String, _ transition: ClientTransition, ifMatch: String? = nil, deleting: Bool = false,
                                 replacingCheck: Bool = false,
                                 _ prepare: (Watch, Int64) throws -> @Sendable (inout Watch) -> Void = { _, _ in { _ in } })
    async throws -> Watch {
        for _ in 0..<10 {
            let current = try existing(id)
            try Self.require(ifMatch, current)
            let check = try current.checkID.flatMap { try store.download(id: $0) }.flatMap {
                transition.from.contains($0.state) && $0.state.canTransition(to: transition.target) ? $0 : nil
            }
            let now = clock.now()
            let change = try prepare(current, now)
            let moved = check.map { transition.applied(to: $0, now: now) }
            let fresh = replacingCheck ? check.flatMap { freshCheck(after: $0, of: current, changed: change, now: now) } : nil
            let (downloads, revision) = (downloads, current.revision)
            let written = try await writes.perform { [store] in
                var changes: [StoreChange] = []
                if let check, let moved { changes.append(downloads.transitionWrite(check, as: moved, now: now)) }
                changes.append(.watch(WatchChange(id: id, afterPrevious: moved != nil) { watch, _ in
                    // Thrown, not refused: the check's transition, written just before, goes too.
                    guard watch.revision == revision else { throw WatchMoved() }
                    guard !deleting else { return WatchWrite(watch: nil, now: now) }
                    var next = watch
                    change(&next)
                    if let fresh {
                        next.checkID = fresh.id
                        next.nextCheckAt = fresh.runAt
                    }
                    return WatchWrite(watch: next, newCheck: fresh, now: now)
                }))
                do { return try store.apply(changes) } catch is WatchMoved { return [false] }
            }
            guard written.last == true else { continue }
            if let moved {
                downloads.announce(moved, liveBytes: nil)
                transition.committed(scheduler, moved)
            }
            if let fresh { scheduler.jobStored(runAt: fresh.runAt) }
            return current
        }
        throw APIProblem.unavailable("the watch kept changing; try again")
    }

    /// The check that follows `check` once `watch` is changed: due when `check` was (now, for one
    /// that was running), or at the watch's new next time if the change moved it; paused if it was
    /// (a paused session's check stays paused).
    private func freshCheck(after check: Download, of watch: Watch, changed change: (inout Watch) -> Void, now: Int64) -> Download? {
        var changed = watch
        change(&changed)
        let due = check.state == .running ? now : changed.nextCheckAt != watch.nextCheckAt ? changed.nextCheckAt : check.runAt
        var fresh = WatchChecks.check(of: changed, id: ids.next(now: now), runAt: max(now, due ?? now), now: now)
        if check.state == .paused { fresh?.state = .paused }
        return fresh
    }

    /// Reads the watch, lets `prepare` judge it (throwing what a client gets) and give the change
    /// to make, and writes it as compare-and-set on the revision read (`If-Match`, when given,
    /// must name it). The change returns a new due time for a queued check, if it moves one.
    private func steer(_ id: String, ifMatch: String? = nil,
                       _ prepare: (Watch, Int64) throws -> @Sendable (inout Watch) -> Int64?) async throws -> Watch {
        for _ in 0..<10 {
            let current = try existing(id)
            try Self.require(ifMatch, current)
            let now = clock.now()
            let change = try prepare(current, now)
            let (store, revision) = (store, current.revision)
            let written = try await writes.perform {
                try store.apply([.watch(WatchChange(id: id) { watch, _ in
                    guard watch.revision == revision else { return nil }
                    var next = watch
                    let due = change(&next)
                    return WatchWrite(watch: next, reschedule: due.flatMap { at in next.checkID.map { ($0, at) } }, now: now)
                })])
            }
            if written.first == true { return try existing(id) }
        }
        throw APIProblem.unavailable("the watch kept changing; try again")
    }

    /// `412` unless `ifMatch`, when given, names the watch's revision.
    private static func require(_ ifMatch: String?, _ current: Watch) throws {
        guard let ifMatch, !EntityTag.matches(ifMatch, revision: current.revision) else { return }
        throw APIProblem(status: 412, title: "Precondition Failed",
                         detail: "the watch changed since the ETag in If-Match; read it again (its ETag is now \(EntityTag.of(revision: current.revision)))")
    }

    private func existing(_ id: String) throws -> Watch {
        guard let watch = try store.watch(id: id) else { throw APIProblem.notFound("no watch with this id") }
        return watch
    }

    private func tagged(_ status: Int, _ watch: Watch, location: Bool = false) -> HTTPResponse {
        var headers = HTTPHeaders([("ETag", EntityTag.of(revision: watch.revision))])
        if location { headers.set("Location", "/watches/\(watch.id)") }
        return .json(status, WatchJSON.encode(watch), headers: headers)
    }
}
