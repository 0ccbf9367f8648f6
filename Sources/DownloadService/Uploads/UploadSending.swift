/// An upload's attempt made of several requests (`TusUpload`, `BucketUpload`), as the runner
/// holds it: started once, stopped on request, ending with one `TransferResult`.
protocol UploadSending: AnyObject {
    func start()
    func cancel()
}

extension TusUpload: UploadSending {}
extension BucketUpload: UploadSending {}
