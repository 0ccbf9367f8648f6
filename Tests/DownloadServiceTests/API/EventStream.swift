import DownloadCore
import Foundation
import HTTPServer
import Synchronization
import Testing
import TestSupport

/// A Server-Sent Events body read as a client reads it: in a task of its own, as the chunks
/// arrive, until the stream ends or the reader stops (which ends the server's side too).
final class EventStream: Sendable {
    /// One frame (the lines up to a blank line), its fields in order; a comment has none.
    struct Frame: Sendable {
        let fields: [(name: String, value: String)]

        init(_ text: Substring) {
            fields = text.split(separator: "\n").compactMap { line in
                guard !line.hasPrefix(":") else { return nil }
                let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
                let value = parts.count > 1 ? parts[1].drop { $0 == " " } : ""
                return (String(parts[0]), String(value))
            }
        }

        subscript(_ name: String) -> String? { fields.first { $0.name == name }?.value }
        var event: String? { self["event"] }
        var id: String? { self["id"] }

        /// The `data` parsed as JSON, nil without data.
        func json() throws -> JSONValue? {
            try self["data"].map { try JSONParser.parse(Array($0.utf8)) }
        }
    }

    private final class Received: Sendable {
        let state = Mutex<(text: String, ended: Bool)>(("", false))
    }

    private let received = Received()
    private let reader: Task<Void, Never>

    init(_ reply: Reply) throws {
        guard case .stream(let chunks) = reply.body else { throw NotAStream() }
        let received = received
        reader = Task {
            for await chunk in chunks {
                received.state.withLock { $0.text += String(decoding: chunk, as: UTF8.self) }
            }
            received.state.withLock { $0.ended = true }
        }
    }

    deinit {
        reader.cancel()
    }

    struct NotAStream: Error {}

    /// Every whole frame so far.
    var frames: [Frame] {
        let text = received.state.withLock { $0.text }
        guard let end = text.range(of: "\n\n", options: .backwards)?.upperBound else { return [] }
        return text[..<end].split(separator: "\n\n").map(Frame.init)
    }

    /// The frames that name an event, in order.
    var events: [Frame] { frames.filter { $0.event != nil } }

    /// Whether the server ended the stream.
    var ended: Bool { received.state.withLock { $0.ended } }

    /// Waits for `count` events; fails the test (and returns what came) if they do not come.
    @discardableResult
    func waitForEvents(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async -> [Frame] {
        #expect(await eventually { self.events.count >= count }, "\(events.count) events came", sourceLocation: sourceLocation)
        return events
    }

    /// Waits for the server to end the stream; false if it did not.
    func waitForEnd() async -> Bool {
        await eventually { self.ended }
    }
}
