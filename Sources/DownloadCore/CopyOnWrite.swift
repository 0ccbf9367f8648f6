/// A value kept behind one reference, copied only when it is changed while shared: a large struct
/// held in a dictionary's buckets then costs each bucket a pointer, not its whole size (a
/// dictionary keeps up to twice as many buckets as entries).
@propertyWrapper
public struct CopyOnWrite<Value> {
    private final class Storage {
        var value: Value

        init(_ value: Value) {
            self.value = value
        }
    }

    private var storage: Storage

    public init(wrappedValue: Value) {
        storage = Storage(wrappedValue)
    }

    public var wrappedValue: Value {
        get { storage.value }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.value) }
            yield &storage.value
        }
    }
}
