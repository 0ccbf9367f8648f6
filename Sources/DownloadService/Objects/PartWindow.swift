import Transfer

/// The parts of an object fetched over several connections: one ranged request a part, at most
/// `connections` at once, and only among the `connections + 1` parts from the first one not yet
/// committed — so that at most `connections + 1` parts are on disk, fetched, being fetched or
/// going up, and the object's digest takes them in order.
struct PartWindow {
    let size: Int64
    let partSize: Int64
    /// The strong validator every part's request carries as `If-Range`.
    let validator: String
    let connections: Int
    /// Parts being fetched, by index (from 0), with the transfer and how far it got.
    private(set) var fetching: [Int: (id: TransferID, next: Int64)] = [:]
    /// Parts whose bytes are all in the staging file and not yet committed.
    private(set) var fetched: Set<Int> = []
    /// The first part not yet committed.
    private(set) var first = 0

    init(size: Int64, partSize: Int64, validator: String, connections: Int) {
        self.size = size
        self.partSize = partSize
        self.validator = validator
        self.connections = max(1, connections)
    }

    var partCount: Int { Int((size + partSize - 1) / partSize) }

    /// The bytes of part `index`.
    func range(of index: Int) -> Range<Int64> {
        Int64(index) * partSize..<min(size, Int64(index + 1) * partSize)
    }

    /// The index of the part that starts at `offset` (the end of the uploaded parts).
    func index(at offset: Int64) -> Int { Int(offset / partSize) }

    /// The parts to ask for now.
    func toStart() -> [Int] {
        let room = connections - fetching.count
        guard room > 0 else { return [] }
        let window = first..<min(partCount, first + connections + 1)
        return Array(window.filter { fetching[$0] == nil && !fetched.contains($0) }.prefix(room))
    }

    /// Bytes of the parts not yet committed that are in the staging file, fetched or being fetched.
    var bytesInWindow: Int64 {
        fetched.reduce(0) { $0 + Int64(range(of: $1).count) }
            + fetching.reduce(0) { $0 + $1.value.next - range(of: $1.key).lowerBound }
    }

    mutating func started(_ index: Int, _ id: TransferID) {
        fetching[index] = (id, range(of: index).lowerBound)
    }

    mutating func progressed(_ index: Int, to next: Int64) {
        fetching[index]?.next = next
    }

    /// The part's request ended; `complete`: with every byte of the part in the file.
    mutating func ended(_ index: Int, complete: Bool) {
        fetching[index] = nil
        if complete { fetched.insert(index) }
    }

    /// The parts before `end` (a part's end) are committed: they leave the window.
    mutating func committed(upTo end: Int64) {
        first = max(first, end >= size ? partCount : index(at: end))
        fetched = fetched.filter { $0 >= first }
    }
}
