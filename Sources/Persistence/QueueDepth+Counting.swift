extension QueueDepth {
    /// Adds `count` queued jobs: due ones wait for a slot; the others wait for a retry or for their date.
    public mutating func add(_ count: Int, due: Bool, retrying: Bool) {
        if due { self.due += count } else if retrying { retry += count } else { earliestBeginDate += count }
    }
}
