import DownloadCore
import Transfer

/// The key an object goes to, chosen when its first bytes go up (or its only `PutObject`): the
/// destination's key, or under a prefix the name the origin gave (`FileName.choose`); with
/// `onConflict: fail` an object already there fails the job at once, and with `rename` the first
/// free `name (1).ext`, `name (2).ext`, … is taken. The final write is conditional all the same
/// (`If-None-Match: *`): an object that appears in between still fails the job, never replaced.
struct ObjectNaming: Sendable {
    let client: ObjectStorageClient
    /// The most `name (n).ext` candidates a rename tries, as on disk.
    static let maxRenameNumber = 9999

    /// The key `job`'s object is meant for before any conflict, given the origin's response.
    static func intendedKey(of job: Download, contentDisposition: String?, effectiveURL: String?) -> String {
        guard job.destination.isDirectory else { return job.destination.relativePath }
        let name = FileName.choose(contentDisposition: contentDisposition, finalURL: effectiveURL ?? job.currentURL)
        return job.destination.file(named: name).relativePath
    }

    func choose(for job: Download, contentDisposition: String?, effectiveURL: String?,
                completion: @escaping @Sendable (Result<String, ObjectStorageFailure>) -> Void) {
        let key = Self.intendedKey(of: job, contentDisposition: contentDisposition, effectiveURL: effectiveURL)
        guard let bucket = job.destination.bucket, job.renameOnConflict else { return completion(.success(key)) }
        let slash = key.lastIndex(of: "/")
        let directory = slash.map { String(key[...$0]) } ?? ""
        let name = slash.map { String(key[key.index(after: $0)...]) } ?? key
        tryCandidate(0, bucket: bucket, directory: directory, name: name, completion: completion)
    }

    private func tryCandidate(_ number: Int, bucket: String, directory: String, name: String,
                              completion: @escaping @Sendable (Result<String, ObjectStorageFailure>) -> Void) {
        let key = directory + (number == 0 ? name : FileName.renamed(name, number: number))
        client.objectExists(ObjectLocation(bucket: bucket, key: key)) { [self] answer in
            switch answer {
            case .success(false): completion(.success(key))
            case .success(true) where number < Self.maxRenameNumber:
                tryCandidate(number + 1, bucket: bucket, directory: directory, name: name, completion: completion)
            case .success(true): completion(.failure(.exists))
            case .failure(let failure): completion(.failure(failure))
            }
        }
    }
}
