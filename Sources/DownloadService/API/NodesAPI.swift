import DownloadCore
import HTTPServer
import Persistence

/// `GET /nodes`: the live fetchd nodes sharing this queue. With a store only this process uses
/// (SQLite), that is this one node.
struct NodesAPI: Sendable {
    let store: any JobStore
    let scheduler: Scheduler
    let name: String
    let startedAt: Int64
    let clock: Clock

    func list() throws -> HTTPResponse {
        let nodes = try store.liveNodes() ?? [
            NodeRecord(name: name, startedAt: startedAt, heartbeatAt: clock.now(), runningTransfers: scheduler.runningTransfers),
        ]
        var json = JSONWriter()
        json.beginObject()
        json.key("items")
        json.beginArray()
        for node in nodes {
            json.beginObject()
            json.field("name", node.name)
            json.field("startedAt", date: node.startedAt)
            json.field("heartbeatAt", date: node.heartbeatAt)
            json.field("runningTransfers", node.runningTransfers)
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return .json(200, json.bytes)
    }
}
