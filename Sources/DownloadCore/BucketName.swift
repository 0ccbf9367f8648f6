/// S3's rules for a bucket's name (general purpose buckets), checked at submit so that a name the
/// storage would refuse is a `400`, not a failed job.
public enum BucketName {
    /// S3's longest key, in bytes of UTF-8.
    public static let maxKeyLength = 1024

    /// What is wrong with `name`, or nil: 3 to 63 characters of lower-case letters, digits, dots
    /// and hyphens, beginning and ending with a letter or digit, no two dots in a row, not shaped
    /// like an IPv4 address, none of the prefixes and suffixes S3 keeps for itself.
    public static func problem(with name: String) -> ValidationProblem? {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count) else {
            return ValidationProblem("the bucket name must be 3 to 63 characters long")
        }
        let isLetterOrDigit = { (byte: UInt8) in (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) }
        guard bytes.allSatisfy({ isLetterOrDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }) else {
            return ValidationProblem("the bucket name may hold only lower-case letters, digits, '.' and '-'")
        }
        guard let first = bytes.first, let last = bytes.last, isLetterOrDigit(first), isLetterOrDigit(last) else {
            return ValidationProblem("the bucket name must begin and end with a letter or digit")
        }
        if name.contains("..") { return ValidationProblem("the bucket name must not hold two dots in a row") }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count == 4, labels.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) && $0.count <= 3 }) {
            return ValidationProblem("the bucket name must not look like an IP address")
        }
        for prefix in reservedPrefixes where name.hasPrefix(prefix) {
            return ValidationProblem("the bucket name must not begin with '\(prefix)'")
        }
        for suffix in reservedSuffixes where name.hasSuffix(suffix) {
            return ValidationProblem("the bucket name must not end with '\(suffix)'")
        }
        return nil
    }

    private static let reservedPrefixes = ["xn--", "sthree-", "amzn-s3-demo-"]
    private static let reservedSuffixes = ["-s3alias", "--ol-s3", ".mrap", "--x-s3"]
}
