import DownloadCore
import Foundation
import Logging

/// Log lines on standard error, as text (`2026-11-22T10:00:00.000Z info message key=value`) or one
/// JSON object per line. The message is constant; data travels in metadata.
struct LineLogHandler: LogHandler {
    enum Format { case text, json }

    let label: String
    let format: Format
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let level = event.level
        let message = event.message
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let time = RFC3339.format(Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
        var text: String
        switch format {
        case .text:
            text = "\(time) \(level) \(message)"
            for key in all.keys.sorted() { text += " \(key)=\(all[key].map { "\($0)" } ?? "")" }
        case .json:
            var object: [String: String] = ["time": time, "level": "\(level)", "message": "\(message)", "logger": label]
            for (key, value) in all { object[key] = "\(value)" }
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            text = String(decoding: data, as: UTF8.self)
        }
        text += "\n"
        FileHandle.standardError.write(Data(text.utf8))
    }
}
