/// An expected digest of a download: the body's `checksum` (`"<alg>:<hex>"`), or a line of the
/// digest file at `checksumURL`.
public struct Checksum: Sendable, Hashable, CustomStringConvertible {
    /// The algorithms a checksum may name; the transfer layer computes each while writing.
    public enum Algorithm: String, Sendable, CaseIterable {
        case sha256, sha512, sha1, md5

        /// Hex digits in a digest of this algorithm: how a bare digest's algorithm is told.
        public var hexLength: Int {
            switch self {
            case .sha256: 64
            case .sha512: 128
            case .sha1: 40
            case .md5: 32
            }
        }

        /// The algorithm whose digests have `hexLength` hex digits.
        public init?(hexLength: Int) {
            guard let match = Self.allCases.first(where: { $0.hexLength == hexLength }) else { return nil }
            self = match
        }
    }

    public var algorithm: Algorithm
    /// Lowercase hex.
    public var hex: String

    public init(algorithm: Algorithm, hex: String) {
        self.algorithm = algorithm
        self.hex = hex.lowercased()
    }

    /// A bare hex digest (either case), its algorithm told by its length; nil for anything else.
    public init?(bareHex text: some StringProtocol) {
        guard text.utf8.allSatisfy(SubmissionValidator.isHexDigit), let algorithm = Algorithm(hexLength: text.utf8.count) else { return nil }
        self.init(algorithm: algorithm, hex: String(text))
    }

    /// `"<alg>:<hex>"` as the body gives it (hex in either case).
    public static func parse(_ text: String) -> Result<Checksum, ValidationProblem> {
        let names = Algorithm.allCases.map(\.rawValue).joined(separator: ", ")
        guard let colon = text.firstIndex(of: ":"), let algorithm = Algorithm(rawValue: text[..<colon].lowercased()) else {
            return .failure(ValidationProblem("must be \"<alg>:<hex>\" with alg one of \(names)"))
        }
        let hex = text[text.index(after: colon)...]
        guard hex.utf8.count == algorithm.hexLength, hex.utf8.allSatisfy(SubmissionValidator.isHexDigit) else {
            return .failure(ValidationProblem("a \(algorithm.rawValue) digest must be \(algorithm.hexLength) hexadecimal characters"))
        }
        return .success(Checksum(algorithm: algorithm, hex: String(hex)))
    }

    /// `"<alg>:<hex>"`, lowercase: as stored and shown.
    public var description: String { "\(algorithm.rawValue):\(hex)" }
}
