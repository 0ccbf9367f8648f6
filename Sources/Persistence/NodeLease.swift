/// The times, in milliseconds, by which the nodes of a cluster judge one another. A node renews
/// its lease every `renewEvery`; stops its own transfers once it could not for `standDownAfter`;
/// is taken for dead by the others when its heartbeat is older than `deadAfter` and its process
/// is gone, or older than `hungAfter` whatever. Standing down before `deadAfter` is what keeps
/// any job from running on two nodes.
public enum NodeLease {
    public static let renewEvery: Int64 = 500
    public static let standDownAfter: Int64 = 1500
    public static let deadAfter: Int64 = 2500
    public static let hungAfter: Int64 = 30_000
}
