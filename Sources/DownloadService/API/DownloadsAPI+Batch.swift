import DownloadCore
import HTTPServer
import Persistence

/// `POST /downloads/batch`: up to `maxBatchItems` submissions in one request. Each item is judged
/// as `POST /downloads` judges a body; the accepted ones are inserted in one transaction; the
/// answer has one result per item, in order. An `Idempotency-Key` covers the batch.
extension DownloadsAPI {
    static let maxBatchItems = 1000
    /// The body cap of this route (the server's is `FETCHD_MAX_REQUEST_BODY`, if larger).
    static let maxBatchBodyBytes = 16 * 1024 * 1024

    /// One item's result before the insert: a job to insert (the next of the jobs, kept apart so
    /// that no job is copied out of this), or the problem that refused it.
    private enum Judged: Sendable {
        case accepted
        case refused(APIProblem)
    }

    func createBatch(_ request: HTTPRequest, principal: String) async throws -> HTTPResponse {
        let body = try Self.jsonBody(request, what: "the batch")
        guard case .object(let fields) = body, case .array(let items)? = fields["items"] else {
            throw APIProblem.invalid("items", "the body must be {\"items\": [submission, …]}")
        }
        if let unknown = fields.keys.sortedByUTF8().first(where: { $0 != "items" }) { throw APIProblem.invalid(unknown, "unknown field") }
        guard items.count <= Self.maxBatchItems else {
            throw APIProblem.invalid("items", "at most \(Self.maxBatchItems) items a batch (this has \(items.count))")
        }
        let idempotency = try Self.idempotency(request, principal: principal)
        let now = clock.now()
        var room = Int.max
        let destinations = DestinationFiles.Checker(files)
        // Fails closed, as a single submission does.
        if let maxQueued = configuration.maxQueued { room = max(0, maxQueued - (try store.counts()[.queued, default: 0])) }
        var jobs: [NewJob] = []
        jobs.reserveCapacity(items.count)
        let judged = items.map { item -> Judged in
            do {
                let submission = try judge(item)
                try checkDestination(submission, with: destinations)
                guard room > 0 else {
                    throw APIProblem.tooManyRequests("the queue holds its maximum of jobs", retryAfterSeconds: 5)
                }
                room -= 1
                let download = submission.makeDownload(id: ids.next(now: now), now: now)
                // Encoded here, on the event loop: the answer shows the created job in these bytes
                // (and PostgreSQL's event log copies them). Before the job is made, so that the
                // Download can move into it: without `consume`, the optimized build copies it, a
                // retain and a release per field.
                let encoded = DownloadJSON.logged(download)
                jobs.append(NewJob(download: consume download, idempotency: nil, statePayload: encoded))
                return .accepted
            } catch let problem as APIProblem {
                return .refused(problem)
            } catch {
                // `judge` and `checkDestination` throw only `APIProblem`s; should anything else come, this
                // item is refused as one to send again, and the rest of the batch goes on.
                return .refused(APIProblem.unavailable("the item could not be judged now"))
            }
        }
        let (store, accepted) = (store, jobs)
        let present: @Sendable ([InsertOutcome]) -> [UInt8] = { [self] outcomes in answer(judged, accepted, outcomes) }
        let outcome = try await writes.perform {
            try store.insertBatch(accepted, idempotency: idempotency, now: now, answer: present)
        }
        switch outcome {
        case .replayed(let kept):
            return .json(200, kept)
        case .keyMismatch:
            throw APIProblem.keyMismatch
        case .inserted(let outcomes):
            let earliest = outcomes.ofCreated(jobs, \.runAt).min()
            if let earliest { scheduler.jobStored(runAt: earliest) }
            return .json(200, answer(judged, jobs, outcomes))
        }
    }

    /// `{"items": [{"status": 201, "download": …} or {"status": 4xx, "problem": …}, …]}`, in request order.
    /// `jobs` and `outcomes`: the accepted items', in order.
    private func answer(_ judged: [Judged], _ jobs: [NewJob], _ outcomes: [InsertOutcome]) -> [UInt8] {
        // Sized from the encoded jobs (about 750 bytes each), so the answer is never copied to grow.
        var json = JSONWriter(capacity: jobs.reduce(16 + 512 * (judged.count - jobs.count)) { $0 + 32 + ($1.statePayload?.count ?? 1024) })
        var next = 0
        json.beginObject()
        json.key("items")
        json.beginArray()
        for item in judged {
            json.beginObject()
            switch item {
            case .accepted:
                let index = next
                next += 1
                // Read in place (an outcome holds a whole Download).
                switch index < outcomes.count ? outcomes[index] : .destinationBusy {
                case .created, .replayed:
                    json.field("status", 201)
                    json.key("download")
                    // A created job is the one given, which the bytes encoded for the event log show;
                    // a replayed one is another.
                    if case .replayed(let job) = outcomes[index] {
                        DownloadJSON.write(job, waitingFor: nil, into: &json)
                    } else if let encoded = jobs[index].statePayload { json.raw(encoded) } else {
                        DownloadJSON.write(jobs[index].download, waitingFor: nil, into: &json)
                    }
                case .destinationBusy, .keyMismatch:
                    write(APIProblem.destinationBusy, into: &json)
                }
            case .refused(let problem):
                write(problem, into: &json)
            }
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return json.bytes
    }

    private func write(_ problem: APIProblem, into json: inout JSONWriter) {
        json.field("status", problem.status)
        json.key("problem")
        if case .bytes(let bytes) = problem.response.body { json.raw(bytes) } else { json.value(nil as String?) }
    }
}
