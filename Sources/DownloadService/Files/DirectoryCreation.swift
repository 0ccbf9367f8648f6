import Glibc

/// Creates the directories fetchd works in at start, each step with `mkdir` itself, so a failure
/// names the setting and the operating system's own reason for the step that failed.
enum DirectoryCreation {
    /// Creates `path` and any missing parents (like `mkdir -p`); an existing directory is fine.
    static func create(_ path: String, setting flag: String) throws(Configuration.Invalid) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o755) == 0 { continue }
            var failure = errno
            if failure == EEXIST {
                if isDirectory(prefix) { continue }
                // What the OS says when a path goes on through a file (and what `mkdir -p` reports).
                failure = ENOTDIR
            }
            let env = Setting.all.first { $0.flag == flag }?.env ?? flag
            let step = prefix == "./" + path || prefix == path ? "" : " (at \(prefix))"
            throw Configuration.Invalid(description: "cannot create \(env) (--\(flag)) \(path)\(step): \(String(cString: strerror(failure)))")
        }
    }

    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}
