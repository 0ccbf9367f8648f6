import Foundation
import Synchronization

/// Counters and histograms for `/metrics`, kept in memory and written in the Prometheus text
/// format. Gauges that the database knows (jobs by state, queue depth, webhook backlog) are read
/// at scrape time instead.
final class Metrics: Sendable {
    /// Upper bounds of the duration histograms, in seconds.
    static let requestBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
    static let transferBuckets: [Double] = [0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600]

    struct Histogram {
        var buckets: [Int]
        var count = 0
        var sum = 0.0

        init(bounds: Int) { buckets = Array(repeating: 0, count: bounds) }

        mutating func observe(_ value: Double, bounds: [Double]) {
            for (index, bound) in bounds.enumerated() where value <= bound { buckets[index] += 1 }
            count += 1
            sum += value
        }
    }

    private struct State {
        var counters: [String: [String: Double]] = [:]  // metric name → labels → value
        var histograms: [String: [String: Histogram]] = [:]
    }

    private let state = Mutex(State())

    func increment(_ name: String, labels: String = "", by amount: Double = 1) {
        state.withLock { $0.counters[name, default: [:]][labels, default: 0] += amount }
    }

    func observe(_ name: String, labels: String = "", seconds: Double, bounds: [Double]) {
        // Mutated in place: copying the histogram out and back would copy its buckets each time.
        state.withLock { $0.histograms[name, default: [:]][labels, default: Histogram(bounds: bounds.count)].observe(seconds, bounds: bounds) }
    }

    /// `name{labels} value` lines for every counter and histogram, with HELP and TYPE.
    func render(help: [String: String], bounds: [String: [Double]]) -> String {
        let snapshot = state.withLock { $0 }
        var text = ""
        for name in snapshot.counters.keys.sorted() {
            text += "# HELP \(name) \(help[name] ?? name)\n# TYPE \(name) counter\n"
            for (labels, value) in snapshot.counters[name, default: [:]].sorted(by: { $0.key < $1.key }) {
                text += "\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(Self.format(value))\n"
            }
        }
        for name in snapshot.histograms.keys.sorted() {
            let limits = bounds[name] ?? []
            text += "# HELP \(name) \(help[name] ?? name)\n# TYPE \(name) histogram\n"
            for (labels, histogram) in snapshot.histograms[name, default: [:]].sorted(by: { $0.key < $1.key }) {
                let prefix = labels.isEmpty ? "" : labels + ","
                for (index, bound) in limits.enumerated() {
                    text += "\(name)_bucket{\(prefix)le=\"\(Self.format(bound))\"} \(histogram.buckets[index])\n"
                }
                text += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(histogram.count)\n"
                text += "\(name)_sum\(labels.isEmpty ? "" : "{\(labels)}") \(histogram.sum)\n"
                text += "\(name)_count\(labels.isEmpty ? "" : "{\(labels)}") \(histogram.count)\n"
            }
        }
        return text
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// `key="value"` pairs, escaped per the exposition format.
    static func labels(_ pairs: KeyValuePairs<String, String>) -> String {
        pairs.map { key, value in
            // Escaping is rare (routes and statuses need none), so it is skipped unless needed: this runs per request.
            let needsEscaping = value.utf8.contains { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == 0x0A }
            let escaped = !needsEscaping ? value : value.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
            return "\(key)=\"\(escaped)\""
        }.joined(separator: ",")
    }
}
