import DownloadCore
import Glibc
import Logging

/// Log lines on standard error, as text (`2026-11-22T10:00:00.000Z info message key=value`) or one
/// JSON object per line with sorted keys. The message is constant; data travels in metadata.
/// Each line is built in bytes and written with one write(2): a line per request is on the hot
/// path of every request.
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
        let all = event.metadata.map { metadata.merging($0) { $1 } } ?? metadata
        let time = RFC3339.formatWithMilliseconds(Self.nowMillis())
        var line: [UInt8] = []
        line.reserveCapacity(256)
        switch format {
        case .text:
            // Appended piece by piece rather than interpolated: a line per request is on its hot path.
            line += time.utf8
            line.append(UInt8(ascii: " "))
            line += event.level.rawValue.utf8
            line.append(UInt8(ascii: " "))
            line += event.message.description.utf8
            for (key, value) in all.sorted(by: { $0.key < $1.key }) {
                line.append(UInt8(ascii: " "))
                line += key.utf8
                line.append(UInt8(ascii: "="))
                if case .string(let text) = value { line += text.utf8 } else { line += value.description.utf8 }
            }
        case .json:
            var fields: [(String, String)] = [("time", time), ("level", "\(event.level)"), ("message", "\(event.message)"), ("logger", label)]
            for (key, value) in all { fields.append((key, "\(value)")) }
            line.append(UInt8(ascii: "{"))
            for (index, (key, value)) in fields.sorted(by: { $0.0 < $1.0 }).enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                JSONString.append(key, to: &line)
                line.append(UInt8(ascii: ":"))
                JSONString.append(value, to: &line)
            }
            line.append(UInt8(ascii: "}"))
        }
        line.append(UInt8(ascii: "\n"))
        Self.writeToStandardError(line)
    }

    private static func nowMillis() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    private static func writeToStandardError(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let count = write(STDERR_FILENO, buffer.baseAddress.map { $0 + done }, buffer.count - done)
                if count < 0 && errno == EINTR { continue }
                // Nowhere to report a failed log write; drop the rest of the line.
                guard count > 0 else { return }
                done += count
            }
        }
    }
}
