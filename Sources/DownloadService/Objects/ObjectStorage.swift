import Transfer

/// The object storage `s3://` destinations go to, as the scheduler's attempts use it: the client
/// (requests through the transfer engine), the size of the parts, and the sweeper that aborts the
/// uploads of ended jobs.
struct ObjectStorage: Sendable {
    let client: ObjectStorageClient
    let partSize: Int64
    let sweeper: UploadSweeper
}
