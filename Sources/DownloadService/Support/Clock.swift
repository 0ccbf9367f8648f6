import Foundation

/// Milliseconds since the Unix epoch, injectable so that tests control time.
public struct Clock: Sendable {
    public var now: @Sendable () -> Int64

    public init(now: @escaping @Sendable () -> Int64) {
        self.now = now
    }

    public static let system = Clock { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}
