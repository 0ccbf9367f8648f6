import DownloadCore

/// A field kept as text that a parser reads back, NULL where the field has nothing to keep; the
/// parser refuses a text the field cannot take.
@usableFromInline protocol ParsedTextColumn: ColumnFormat {
    static func text(_ field: Field) -> String?
    static func parse(_ text: String?) throws(ColumnProblem) -> Field
}

extension ParsedTextColumn {
    @usableFromInline static var kind: ColumnKind { .text }
    // Inlinable, so that each backend's writer calls the column's `text` directly.
    @inlinable static func write(_ field: Field) -> ColumnValue { OptionalTextColumn.write(text(field)) }
    @usableFromInline static func read(_ value: consuming ColumnValue, into field: inout Field) throws(ColumnProblem) {
        var text: String?
        try OptionalTextColumn.read(value, into: &text)
        field = try parse(text)
    }
    // Inlinable, to be specialized for each backend's rows in its module, as the reader is.
    @inlinable static func read<Row: ColumnReading>(_ row: Row, at position: Int, into field: inout Field) throws(ColumnProblem) {
        var text: String?
        try OptionalTextColumn.read(row, at: position, into: &text)
        field = try parse(text)
    }

    /// A stored text as an error shows it.
    static func quoted(_ text: String?) -> String {
        text.map { "\"\($0)\"" } ?? "NULL"
    }
}

@usableFromInline enum StateColumn: ParsedTextColumn {
    @usableFromInline typealias Field = DownloadState

    @usableFromInline static func text(_ state: DownloadState) -> String? { state.rawValue }
    @usableFromInline static func parse(_ text: String?) throws(ColumnProblem) -> DownloadState {
        // Never read as some other state: a job read as failed, say, would be settled as one.
        guard let text, let state = DownloadState(rawValue: text) else {
            throw ColumnProblem(message: "holds \(quoted(text)), not a state")
        }
        return state
    }
}

@usableFromInline enum DestinationColumn: ParsedTextColumn {
    @usableFromInline typealias Field = Destination

    @usableFromInline static func text(_ destination: Destination) -> String? { destination.path }
    @usableFromInline static func parse(_ text: String?) throws(ColumnProblem) -> Destination {
        guard let text else { throw .unexpected(.null, .text) }
        return Destination(stored: text)
    }
}

@usableFromInline enum ChecksumColumn: ParsedTextColumn {
    @usableFromInline typealias Field = Checksum?

    @usableFromInline static func text(_ checksum: Checksum?) -> String? { checksum?.description }
    @usableFromInline static func parse(_ text: String?) throws(ColumnProblem) -> Checksum? {
        guard let text else { return nil }
        switch Checksum.parse(text) {
        case .success(let checksum): return checksum
        case .failure(let problem): throw ColumnProblem(message: "holds \(quoted(text)), not a checksum: \(problem.message)")
        }
    }
}

/// A job must not run without the headers (credentials, say) it was given; nor does an error
/// show their text.
@usableFromInline enum HeadersColumn: ParsedTextColumn {
    @usableFromInline typealias Field = [OriginHeader]

    @usableFromInline static func text(_ headers: [OriginHeader]) -> String? { JSONArrayColumn.text(headers) }
    @usableFromInline static func parse(_ text: String?) throws(ColumnProblem) -> [OriginHeader] {
        try JSONArrayColumn.items(text, of: "headers")
    }
}

@usableFromInline enum MirrorsColumn: ParsedTextColumn {
    @usableFromInline typealias Field = [String]

    @usableFromInline static func text(_ mirrors: [String]) -> String? { JSONArrayColumn.text(mirrors) }
    @usableFromInline static func parse(_ text: String?) throws(ColumnProblem) -> [String] {
        try JSONArrayColumn.items(text, of: "mirrors")
    }
}

/// NULL for a download on one connection.
@usableFromInline enum RangesColumn: ParsedTextColumn {
    @usableFromInline typealias Field = [RangeProgress]

    @usableFromInline static func text(_ ranges: [RangeProgress]) -> String? { RangeProgress.text(ranges) }
    @usableFromInline static func parse(_ text: String?) throws(ColumnProblem) -> [RangeProgress] {
        // `parse` gives no ranges for a malformed text, and `text` writes NULL, not a text, for none.
        let ranges = RangeProgress.parse(text)
        guard let text, ranges.isEmpty else { return ranges }
        throw ColumnProblem(message: "holds \(quoted(text)), not byte ranges")
    }
}

/// NULL for no multipart upload.
@usableFromInline enum ObjectUploadColumn: ParsedTextColumn {
    @usableFromInline typealias Field = ObjectUpload?

    @usableFromInline static func text(_ upload: ObjectUpload?) -> String? { upload?.text }
    @usableFromInline static func parse(_ text: String?) throws(ColumnProblem) -> ObjectUpload? {
        guard let text else { return nil }
        guard let upload = ObjectUpload.parse(text) else { throw ColumnProblem(message: "holds \(quoted(text)), not a multipart upload") }
        return upload
    }
}

/// NULL for a download; an upload's plan as its text.
@usableFromInline enum UploadPlanColumn: ParsedTextColumn {
    @usableFromInline typealias Field = UploadPlan?

    @usableFromInline static func text(_ plan: UploadPlan?) -> String? { plan?.text }
    @usableFromInline static func parse(_ text: String?) throws(ColumnProblem) -> UploadPlan? {
        guard let text else { return nil }
        guard let plan = UploadPlan.parse(text) else { throw ColumnProblem(message: "holds \(quoted(text)), not an upload") }
        return plan
    }
}

@usableFromInline enum WatchLinkColumn: ParsedTextColumn {
    @usableFromInline typealias Field = WatchLink?

    @usableFromInline static func text(_ link: WatchLink?) -> String? { link?.text }
    @usableFromInline static func parse(_ text: String?) throws(ColumnProblem) -> WatchLink? {
        guard let text else { return nil }
        guard let link = WatchLink.parse(text) else { throw ColumnProblem(message: "holds \(quoted(text)), not a watch") }
        return link
    }
}

/// A job's error is two columns, read in order: the code makes the error, the message fills it in.
@usableFromInline enum ErrorCodeColumn: ParsedTextColumn {
    @usableFromInline typealias Field = DownloadError?

    @usableFromInline static func text(_ error: DownloadError?) -> String? { error?.code }
    @usableFromInline static func parse(_ text: String?) throws(ColumnProblem) -> DownloadError? {
        text.map { DownloadError(code: $0, message: "") }
    }
}

@usableFromInline enum ErrorMessageColumn: ColumnFormat {
    @usableFromInline static var kind: ColumnKind { .text }
    @usableFromInline static func write(_ error: DownloadError?) -> ColumnValue { OptionalTextColumn.write(error?.message) }
    @usableFromInline static func read(_ value: consuming ColumnValue, into error: inout DownloadError?) throws(ColumnProblem) {
        var message: String?
        try OptionalTextColumn.read(value, into: &message)
        error?.message = message ?? ""
    }
    @inlinable static func read<Row: ColumnReading>(_ row: Row, at position: Int, into error: inout DownloadError?) throws(ColumnProblem) {
        var message: String?
        try OptionalTextColumn.read(row, at: position, into: &message)
        error?.message = message ?? ""
    }
}
