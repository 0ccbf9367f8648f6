import Dispatch
import Synchronization

extension ObjectStorageClient {
    /// Aborts the multipart uploads of exactly this key that hold no part yet, and completes with
    /// how many it aborted (or the first failure, once every request has answered).
    ///
    /// What a crash between CreateMultipartUpload and the commit of its answer leaves: an upload
    /// whose id nobody kept. fetchd keeps every upload before sending its first part, so one it
    /// lost holds none. An upload of the same key that someone else began an instant ago holds none
    /// either, and is aborted too: two writers of one key conflict whichever way it goes.
    public func abortUploadsWithoutParts(_ at: ObjectLocation,
                                         completion: @escaping @Sendable (Result<Int, ObjectStorageFailure>) -> Void) {
        listMultipartUploads(at) { listed in
            let ids: [String]
            switch listed {
            case .failure(let failure): return completion(.failure(failure))
            case .success(let found): ids = found
            }
            let outcome = UnrecordedSweep()
            let group = DispatchGroup()
            for id in ids {
                group.enter()
                self.listParts(at, uploadID: id) { parts in
                    switch parts {
                    case .failure(.noSuchUpload): group.leave()  // gone meanwhile
                    case .failure(let failure):
                        outcome.failed(failure)
                        group.leave()
                    case .success(let parts) where !parts.isEmpty: group.leave()
                    case .success:
                        self.abortMultipartUpload(at, uploadID: id) { aborted in
                            if case .failure(let failure) = aborted { outcome.failed(failure) } else { outcome.aborted() }
                            group.leave()
                        }
                    }
                }
            }
            group.notify(queue: .global()) { completion(outcome.result) }
        }
    }
}

/// The outcome of one `abortUploadsWithoutParts`, added to from the requests' completions.
private final class UnrecordedSweep: Sendable {
    private let state = Mutex((aborted: 0, failure: ObjectStorageFailure?.none))

    func aborted() { state.withLock { $0.aborted += 1 } }
    func failed(_ failure: ObjectStorageFailure) { state.withLock { $0.failure = $0.failure ?? failure } }
    var result: Result<Int, ObjectStorageFailure> { state.withLock { $0.failure.map { .failure($0) } ?? .success($0.aborted) } }
}
