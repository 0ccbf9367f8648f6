import Glibc

/// What a tus upload leaves as its partial file once the server confirmed the whole source: the
/// resource's URL. A server may remove a finished upload's resource (aiohttp-tus does), so an
/// attempt after a stop between that answer and the completion's commit — this node's next
/// start, or another node taking the job over — would find the resource gone and create another:
/// the file sent twice, or refused as already there (`409`). Finding the resource named here gone,
/// the attempt completes instead. The file goes with the completion (it also serves as the mark
/// of a `deleteSource` left to do).
///
/// Written whole or not at all (under a temporary name, then renamed), not synced: it outlives
/// the process, as the page cache does; a machine that loses power loses it, and the attempt
/// after creates another resource, as without it.
struct TusWitness: Sendable {
    /// The job's partial file.
    let path: String

    func record(_ resource: String) {
        let temporary = path + ".tus"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let bytes = Array(resource.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        if written != bytes.count || rename(temporary, path) != 0 { unlink(temporary) }
    }

    /// Whether the server confirmed that `resource` holds the whole source.
    func saw(_ resource: String) -> Bool {
        (try? TextFile.read(path)) == resource
    }
}
