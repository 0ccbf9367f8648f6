import Dispatch

/// The serial lane of the service's periodic upkeep: pruning (`Housekeeper`), giving watches new
/// checks (`WatchKeeper`) and aborting ended jobs' uploads (`UploadSweeper`) each keep a queue of
/// their own that targets this one, so no two of them run at once. None is urgent, and started
/// together each took a thread of its own (its stack and a malloc arena: resident memory).
enum Upkeep {
    static let queue = DispatchQueue(label: "fetchd.upkeep", qos: .utility)
}
