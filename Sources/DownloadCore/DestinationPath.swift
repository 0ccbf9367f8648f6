/// A destination as a value: the path the client gave, checked by `DestinationPath`'s rules and
/// split into its segments. The service walks `directories` and places `fileName` without
/// parsing the path itself. A path ending in `/` names a directory: the file's name is chosen
/// when the origin answers (`FileName.choose`) and joined on with `file(named:)`.
///
/// `s3://bucket/key` names an object in a bucket of the configured object storage instead
/// (`bucket` set): the key's segments follow the same rules, and a key ending in `/` is a prefix.
///
/// Equal by `path`: the rest follows from it.
public struct Destination: Sendable, Hashable, CustomStringConvertible {
    /// As the client gave it (and as stored and shown).
    public let path: String
    /// The path split, kept when it was just checked (`parse`). A path read back from the store
    /// (`init(stored:)`) is split again on each use: most stored jobs are read only to be shown,
    /// and splitting each listed job's path took 5 % of a list's CPU.
    private let split: Split?

    private struct Split: Sendable {
        let segments: [String]
        let isDirectory: Bool
        let bucket: String?

        /// A path that breaks the rules: no segments, so nothing is ever written for it.
        static let invalid = Split(segments: [], isDirectory: false, bucket: nil)
    }

    private var parts: Split {
        if let split { return split }
        return (try? Self.parse(path).get())?.split ?? .invalid
    }

    /// The directories on the way, then the file's name (none for a directory); empty when
    /// `path` breaks the rules.
    public var segments: [String] { parts.segments }
    /// The path ends in `/`: it names the directory the file goes into.
    public var isDirectory: Bool { parts.isDirectory }
    /// The bucket of an object destination; nil for a file under the download root (known from
    /// the path's scheme, without splitting it).
    public var bucket: String? { path.hasPrefix(Self.objectScheme) ? parts.bucket : nil }

    public static func == (lhs: Destination, rhs: Destination) -> Bool { lhs.path == rhs.path }
    public func hash(into hasher: inout Hasher) { hasher.combine(path) }

    public static let objectScheme = "s3://"

    public static func parse(_ path: String) -> Result<Destination, ValidationProblem> {
        if path.hasPrefix(objectScheme) { return parseObject(path) }
        let isDirectory = path.utf8.count > 1 && path.utf8.last == UInt8(ascii: "/")
        return DestinationPath.components(of: isDirectory ? String(Substring(path.utf8.dropLast())) : path)
            .map { Destination(path: path, segments: $0, isDirectory: isDirectory, bucket: nil) }
    }

    /// `s3://bucket/key`: the bucket by S3's naming rules, the key by the path rules (`s3://bucket/`
    /// is the bucket's top, a prefix like any key ending in `/`).
    private static func parseObject(_ path: String) -> Result<Destination, ValidationProblem> {
        let rest = path.dropFirst(objectScheme.count)
        guard let slash = rest.firstIndex(of: "/") else {
            return .failure(ValidationProblem("must name a key in the bucket: s3://bucket/key, or s3://bucket/prefix/"))
        }
        let bucket = String(rest[..<slash])
        if let problem = BucketName.problem(with: bucket) { return .failure(problem) }
        let key = String(rest[rest.index(after: slash)...])
        if key.isEmpty { return .success(Destination(path: path, segments: [], isDirectory: true, bucket: bucket)) }
        if key.utf8.count > BucketName.maxKeyLength {
            return .failure(ValidationProblem("the object key must be at most \(BucketName.maxKeyLength) bytes"))
        }
        let isDirectory = key.utf8.last == UInt8(ascii: "/")
        return DestinationPath.components(of: isDirectory ? String(key.dropLast()) : key)
            .map { Destination(path: path, segments: $0, isDirectory: isDirectory, bucket: bucket) }
    }

    /// The same destination with its path split now, for a caller about to read several of its
    /// parts: a stored path is otherwise split again at each (placing a file read seven).
    public var withSegments: Destination {
        split == nil ? Destination(path: path, split: parts) : self
    }

    /// A path read back from where fetchd stored it after checking it: one that no longer
    /// passes (a database edited by hand) has no segments, so nothing is ever written for it.
    public init(stored path: String) {
        self.path = path
        split = nil
    }

    private init(path: String, segments: [String], isDirectory: Bool, bucket: String?) {
        self.init(path: path, split: Split(segments: segments, isDirectory: isDirectory, bucket: bucket))
    }

    private init(path: String, split: Split) {
        self.path = path
        self.split = split
    }

    /// The file called `name` (one safe segment: `FileName.choose`) in this directory destination.
    public func file(named name: String) -> Destination {
        let parts = parts
        return Destination(path: path + name, segments: parts.segments + [name], isDirectory: false, bucket: parts.bucket)
    }

    /// The path under the root of a file called `name` in the directory this destination's file
    /// goes to: where a renamed file, or a directory destination's, was placed. For an object,
    /// its key.
    public func pathInDirectory(named name: String) -> String {
        (directories + [name]).joined(separator: "/")
    }

    /// The file's path under the root, or the object's key; a directory's ends in `/`. Read off
    /// the path as given, which a valid destination's segments joined again would only rebuild
    /// (no empty or `.` segments pass); empty when there are none.
    public var relativePath: String {
        let parts = parts
        guard !parts.segments.isEmpty else { return "" }
        guard let bucket = parts.bucket else { return path }
        return String(path.dropFirst(Self.objectScheme.count + bucket.count + 1))
    }

    public var isObject: Bool { bucket != nil }
    public var isValid: Bool {
        let parts = parts
        return !parts.segments.isEmpty || (parts.bucket != nil && parts.isDirectory)
    }
    public var directories: ArraySlice<String> {
        let parts = parts
        return parts.isDirectory ? parts.segments[...] : parts.segments.dropLast()
    }
    /// The last segment; empty when the destination is a directory or not valid.
    public var fileName: String {
        let parts = parts
        return parts.isDirectory ? "" : parts.segments.last ?? ""
    }
    public var description: String { path }
}

/// The lexical rules for a destination: a relative path of plain names inside the download root.
/// Where the path resolves on disk (symlinks) is checked by the service, at submit and again
/// when the file is moved into place.
public enum DestinationPath {
    public static let maxLength = 1024
    public static let maxComponentLength = 255
    /// Names with this prefix are fetchd's own temporary files in destination directories.
    public static let reservedPrefix = ".fetchd-"

    /// The path's components, or a message saying what is wrong with it.
    /// Checked on the path's bytes in place: every submission's destination comes through here.
    public static func components(of path: String) -> Result<[String], ValidationProblem> {
        if path.isEmpty { return .failure(ValidationProblem("must not be empty")) }
        if path.utf8.count > maxLength { return .failure(ValidationProblem("must be at most \(maxLength) bytes")) }
        var path = path
        return path.withUTF8 { bytes in
            if bytes[0] == UInt8(ascii: "/") { return .failure(ValidationProblem("must be a relative path, not absolute")) }
            // Printable ASCII, as most paths are, needs no look at Unicode properties.
            if !bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
                for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars where isForbidden(scalar) {
                    return .failure(ValidationProblem("must not contain control, format or separator characters (U+\(String(scalar.value, radix: 16, uppercase: true)))"))
                }
            }
            if bytes.contains(UInt8(ascii: "\\")) { return .failure(ValidationProblem("must use '/' as the separator, not '\\'")) }
            // Split as bytes: the file system does, and it costs no grapheme breaking.
            var parts: [String] = []
            var partStart = 0
            for index in 0...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: "/") {
                let part = UnsafeBufferPointer(rebasing: bytes[partStart..<index])
                partStart = index + 1
                if let problem = problem(withSegment: part) { return .failure(problem) }
                parts.append(String(decoding: part, as: UTF8.self))
            }
            return .success(parts)
        }
    }

    private static func problem(withSegment part: UnsafeBufferPointer<UInt8>) -> ValidationProblem? {
        let dot = UInt8(ascii: ".")
        if part.isEmpty { return ValidationProblem("must not contain empty segments") }
        if part.allSatisfy({ $0 == dot }) && part.count <= 2 { return ValidationProblem("must not contain '.' or '..' segments") }
        if part.count > maxComponentLength { return ValidationProblem("each segment must be at most \(maxComponentLength) bytes") }
        if part.starts(with: reservedPrefix.utf8) { return ValidationProblem("names starting with '\(reservedPrefix)' are reserved") }
        return nil
    }

    /// Control characters (C0, DEL, C1), invisible format characters (bidi overrides, zero-width),
    /// and line/paragraph separators: none belong in a file name a person has to read.
    static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        if v < 0x20 || (0x7F...0x9F).contains(v) { return true }
        // Printable ASCII is always allowed; the Unicode property lookup below is the slow part.
        if v < 0x7F { return false }
        switch scalar.properties.generalCategory {
        case .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned: return true
        default: return false
        }
    }
}

public struct ValidationProblem: Error, Equatable, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
}
