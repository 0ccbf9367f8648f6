/// A digest file as `checksumURL` names it: the output of `sha256sum`/`sha512sum` (and the other
/// coreutils `*sum`s: `<hex>  <name>`, `<hex> *<name>` for binary mode), BSD-style lines
/// (`SHA256 (name) = <hex>`), or a bare hex digest. Blank lines and `#` comments are skipped.
public struct DigestFile: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        /// The file name the line gives, without a leading `./` or directories; nil for a bare digest.
        public var name: String?
        public var checksum: Checksum
    }

    /// The largest digest file read; a bigger one is not a digest file for one download.
    public static let maxBytes = 1 << 20

    public var entries: [Entry]

    /// The digest file as its server answered: a 2xx with at most `maxBytes` of UTF-8 text.
    public static func read(status: Int, body: [UInt8]) -> Result<DigestFile, ValidationProblem> {
        guard (200..<300).contains(status) else { return .failure(ValidationProblem("answered HTTP \(status)")) }
        guard body.count <= maxBytes else { return .failure(ValidationProblem("is larger than \(maxBytes) bytes")) }
        guard let text = String(validating: body, as: UTF8.self) else { return .failure(ValidationProblem("is not UTF-8 text")) }
        return parse(text)
    }

    /// Whether a server's `status` is worth another attempt (408, 429, 5xx), as from an origin.
    public static func isTransient(status: Int) -> Bool {
        status == 408 || status == 429 || status >= 500
    }

    /// The file's lines, or what makes it unusable: a line that is not a digest, or no line at all.
    public static func parse(_ text: String) -> Result<DigestFile, ValidationProblem> {
        var entries: [Entry] = []
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let entry = coreutilsLine(line) ?? bsdLine(line) else {
                return .failure(ValidationProblem("has a line (\(index + 1)) that is not a digest"))
            }
            entries.append(entry)
        }
        guard !entries.isEmpty else { return .failure(ValidationProblem("has no digest in it")) }
        return .success(DigestFile(entries: entries))
    }

    /// The checksum for the file called `fileName`: the line naming it, or else the only line.
    public func checksum(for fileName: String) -> Result<Checksum, ValidationProblem> {
        if let entry = entries.first(where: { $0.name == fileName }) { return .success(entry.checksum) }
        if entries.count == 1 { return .success(entries[0].checksum) }
        return .failure(ValidationProblem("has \(entries.count) lines and none for '\(fileName)'"))
    }

    /// `<hex>  <name>`, `<hex> *<name>` or `<hex>`.
    private static func coreutilsLine(_ line: String) -> Entry? {
        let hexEnd = line.firstIndex(where: { $0 == " " || $0 == "\t" }) ?? line.endIndex
        guard let checksum = Checksum(bareHex: line[..<hexEnd]) else { return nil }
        var name = line[hexEnd...].drop { $0 == " " || $0 == "\t" }
        if name.hasPrefix("*") { name = name.dropFirst() }
        return Entry(name: name.isEmpty ? nil : baseName(name), checksum: checksum)
    }

    /// `SHA256 (name) = <hex>`; the algorithm named must be the one the digest's length says.
    private static func bsdLine(_ line: String) -> Entry? {
        guard let open = line.firstIndex(of: "("), let close = line.lastIndex(of: ")"), open < close else { return nil }
        let value = line[line.index(after: close)...].drop { $0 == " " }
        guard value.hasPrefix("="), let checksum = Checksum(bareHex: value.dropFirst().drop { $0 == " " }),
              line[..<open].filter({ $0 != " " && $0 != "-" }).lowercased() == checksum.algorithm.rawValue
        else { return nil }
        return Entry(name: baseName(line[line.index(after: open)..<close]), checksum: checksum)
    }

    /// The last segment of a path as a digest file gives it (`./dist/app.tar.gz` names `app.tar.gz`).
    private static func baseName(_ path: Substring) -> String {
        String(path.split(separator: "/").last ?? path)
    }
}
