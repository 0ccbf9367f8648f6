import DownloadCore

extension Download {
    /// This job — the scheduler's copy of a running one — with the fields a client's change
    /// (`PATCH`, as `JobStore.change` stored it in `changed`) set: the field of every client's
    /// column (`ColumnOwner.client`) but `hostKey`, so that the attempt settles with the client's
    /// fields and no state change undoes them.
    ///
    /// `hostKey` stays as the job started: the scheduler counts a running job against the host it
    /// started on, and must take it off that host's count when it ends. The store keeps the new
    /// host (a state change never writes it), which the job's next attempt starts on.
    public func takingClientFields(from changed: Download) -> Download {
        var source = changed
        var taker = FieldTaker(includes: Self.carriedOntoRunningJob.includes)
        DownloadTable.visit(&source, &taker)
        var job = self
        var giver = FieldGiver(fields: taker.fields, includes: taker.includes)
        DownloadTable.visit(&job, &giver)
        return job
    }

    /// The columns `takingClientFields` takes.
    static let carriedOntoRunningJob = ColumnSet { $0.owner == .client && $0.name != DownloadTable.hostKeyColumn }
}

/// The fields of the columns `includes` marks, as they are.
private struct FieldTaker: ColumnVisitor {
    typealias Failure = Never

    let includes: [Bool]
    var fields: [Any] = []
    var position = 0

    mutating func column<Format: ColumnFormat>(_ name: String, _ owner: ColumnOwner, _ field: inout Format.Field,
                                               _ format: Format.Type) {
        if includes[position] { fields.append(field) }
        position += 1
    }
}

/// Sets the fields of the columns `includes` marks to those a `FieldTaker` took, in order.
private struct FieldGiver: ColumnVisitor {
    typealias Failure = Never

    let fields: [Any]
    let includes: [Bool]
    var position = 0
    var next = 0

    mutating func column<Format: ColumnFormat>(_ name: String, _ owner: ColumnOwner, _ field: inout Format.Field,
                                               _ format: Format.Type) {
        defer { position += 1 }
        guard includes[position] else { return }
        // The taker visited the same columns of the same table, so each is of its column's type.
        guard let taken = fields[next] as? Format.Field else {
            preconditionFailure("column \(name) was taken as another type")
        }
        field = taken
        next += 1
    }
}
