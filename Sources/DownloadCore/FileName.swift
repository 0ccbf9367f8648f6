/// File names that come from outside (a server's `Content-Disposition`, the last segment of a
/// URL) made into one safe path segment under `DestinationPath`'s rules, and the
/// `name (1).ext` names of `onConflict: rename`.
///
/// For a directory destination (`dir/`) the service calls `choose(contentDisposition:finalURL:)`
/// once the final response's head is known (`TransferResult.contentDisposition` and
/// `effectiveURL`), joins the name to the directory and stores the result as the job's `path`.
/// At placement with `onConflict: rename` it tries `renamed(_:number:)` for 1, 2, … until a
/// name is free.
public enum FileName {
    /// The name used when nothing better is left.
    public static let fallback = "download"

    /// The name for a download into a directory: the `Content-Disposition` header's file name,
    /// else the last segment of the final URL's path, else `download`. Always a safe segment.
    public static func choose(contentDisposition: String?, finalURL: String?) -> String {
        if let header = contentDisposition, let name = ContentDisposition(header).filename, let safe = safeOrNil(name) {
            return safe
        }
        if let url = finalURL, let segment = lastPathSegment(of: url), let safe = safeOrNil(segment) {
            return safe
        }
        return fallback
    }

    /// `name` made into one safe path segment: separators, control and invisible characters become
    /// `_`, leading dots and surrounding spaces go (no hidden files, no `.`/`..`, no reserved
    /// prefix), and the name is cut to 255 bytes keeping its extension. A name with nothing left
    /// becomes `download`: never refused.
    public static func safe(_ name: String) -> String {
        safeOrNil(name) ?? fallback
    }

    static func safeOrNil(_ name: String) -> String? {
        var scalars = String.UnicodeScalarView()
        for scalar in name.unicodeScalars {
            let isSeparator = scalar == "/" || scalar == "\\"
            scalars.append(isSeparator || DestinationPath.isForbidden(scalar) ? "_" : scalar)
        }
        let trimmed = String(scalars)
            .drop { $0 == "." || $0 == " " }
            .reversed().drop { $0 == " " || $0 == "." }.reversed()
        let cut = truncated(String(trimmed), toBytes: DestinationPath.maxComponentLength)
        // Whatever the rules above missed, the destination rules have the last word.
        guard !cut.isEmpty, case .success(let parts) = DestinationPath.components(of: cut), parts == [cut] else {
            return nil
        }
        return cut
    }

    /// The last non-empty segment of a URL's path, percent-decoded (kept encoded if it does not
    /// decode to UTF-8); nil when the path has none.
    public static func lastPathSegment(of url: String) -> String? {
        var rest = Substring(url)
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        if let scheme = rest.firstRange(of: "://") {
            rest = rest[scheme.upperBound...]
            // Past the authority: a URL without a path has no segment.
            guard let slash = rest.firstIndex(of: "/") else { return nil }
            rest = rest[slash...]
        }
        guard let segment = rest.split(separator: "/").last else { return nil }
        if let bytes = PercentEncoding.decode(segment), let decoded = String(validating: bytes, as: UTF8.self) {
            return decoded
        }
        return String(segment)
    }

    /// The `number`th candidate for `onConflict: rename`: `report.pdf` → `report (1).pdf`,
    /// `data.tar.gz` → `data (1).tar.gz`, `README` → `README (1)`, `.profile` → `.profile (1)`;
    /// cut so that it stays within 255 bytes.
    public static func renamed(_ name: String, number: Int) -> String {
        let (stem, suffix) = splitExtension(name)
        let marker = " (\(number))"
        let room = DestinationPath.maxComponentLength - marker.utf8.count - suffix.utf8.count
        return truncated(stem, toBytes: max(1, room)) + marker + suffix
    }

    /// The stem and the extension with its dot. `.tar.*` counts as one extension; a leading dot
    /// (a hidden file) does not start one; an "extension" of more than 16 bytes is part of the stem.
    static func splitExtension(_ name: String) -> (stem: String, suffix: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex,
              name.utf8.distance(from: dot, to: name.endIndex) <= 16
        else { return (name, "") }
        var start = dot
        let before = name[..<dot]
        if before.lowercased().hasSuffix(".tar"), before.count > 4 {
            start = name.index(dot, offsetBy: -4)
        }
        return (String(name[..<start]), String(name[start...]))
    }

    /// At most `limit` UTF-8 bytes of `name`, cut between characters, keeping the extension when
    /// it is short enough to keep.
    static func truncated(_ name: String, toBytes limit: Int) -> String {
        guard name.utf8.count > limit else { return name }
        let (stem, suffix) = splitExtension(name)
        let keep = suffix.utf8.count < limit / 2 ? suffix : ""
        var result = ""
        var size = 0
        for character in (keep.isEmpty ? name : stem) {
            let length = character.utf8.count
            guard size + length + keep.utf8.count <= limit else { break }
            result.append(character)
            size += length
        }
        return result + keep
    }
}
