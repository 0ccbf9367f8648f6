import Persistence

/// One row of the event log. A row holds `count` events: the sequence numbers `seq - count + 1`
/// through `seq`, so the sequence stays one per event while a batch or a session action writes one
/// row per run of up to `StateLog.eventsPerRow` jobs instead of one row (and two index entries) per job.
/// A row of one event holds its job's id and payload as they are; a row of more holds a JSON array
/// of the ids and a JSON array of the payloads, in sequence order. All its events are of one session.
struct LogRow {
    var seq: Int64
    var count: Int
    var downloadID: String
    var session: String
    var payload: [UInt8]

    /// Its first `limit` events after `sequence`, in order, their payloads as stored (snapshots not yet expanded).
    func events(after sequence: Int64, limit: Int) throws -> [LoggedEvent] {
        let first = seq - Int64(count) + 1
        guard count > 1 else {
            return seq > sequence ? [LoggedEvent(sequence: seq, downloadID: downloadID, session: session, payload: payload)] : []
        }
        let ids = RowSnapshot(Array(downloadID.utf8))
        guard let ids, ids.columnCount == count, let payloads = JSONArrayElements.split(payload), payloads.count == count else {
            throw SQLiteError(code: 0, message: "event log row \(seq) does not hold \(count) events")
        }
        let start = max(0, Int(sequence - first) + 1)
        guard start < count, limit > 0 else { return [] }
        // A session action's snapshots after the first hold only where they differ from it (`SnapshotRows`).
        var base: [ArraySlice<UInt8>]?
        return try (start..<min(count, start + limit)).map { index in
            var payload = Array(payloads[index])
            if payload.starts(with: "[null".utf8) {
                if base == nil { base = JSONArrayElements.split(Array(payloads[0])) }
                guard let base, let whole = SnapshotRows.filled(payloads[index], from: base) else {
                    throw SQLiteError(code: 0, message: "event log row \(seq) holds a snapshot that does not fit its first")
                }
                payload = whole
            }
            return LoggedEvent(sequence: first + Int64(index), downloadID: ids.string(index), session: session, payload: payload)
        }
    }
}

/// The elements of a JSON array, as the bytes that spell each, without parsing them.
enum JSONArrayElements {
    /// nil when `bytes` is not a JSON array (as far as brackets, braces and strings tell).
    static func split(_ bytes: [UInt8]) -> [ArraySlice<UInt8>]? {
        guard bytes.first == UInt8(ascii: "["), bytes.last == UInt8(ascii: "]") else { return nil }
        var elements: [ArraySlice<UInt8>] = []
        var depth = 0
        var inString = false
        var escaped = false
        var start = 1
        for index in 1..<(bytes.count - 1) {
            let byte = bytes[index]
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            case UInt8(ascii: ",") where depth == 0:
                elements.append(bytes[start..<index])
                start = index + 1
            default: break
            }
        }
        guard depth == 0, !inString else { return nil }
        if bytes.count > 2 { elements.append(bytes[start..<(bytes.count - 1)]) }
        return elements
    }
}
