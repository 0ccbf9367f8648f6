import DownloadCore
import Persistence
import Testing

/// The downloads table itself (`DownloadTable`), apart from any backend: it covers every field of
/// a `Download`, once, and says who writes each column as `JobStore` documents it.
@Suite struct DownloadTableTests {
    /// Every field of a job written to its column and read back from it: a field no column covers
    /// would read back as the default it has before its column is read.
    @Test func everyFieldReadsBackFromItsColumn() throws {
        let job = everyFieldSet("01A", variant: 3, state: .running, revision: 7)
        #expect(try DownloadTable.download(from: Cells(columnValues(job))) == job)
    }

    /// `everyFieldSet` sets every stored property of `Download` to something else than the job a
    /// row's read starts from, so the test above sees a field a new version adds and no column covers.
    @Test func theJobWithEveryFieldSetLeavesNoFieldAtItsDefault() {
        let unread = Download(
            id: "", url: "", destination: Destination(stored: ""), session: "", state: .queued, earliestBeginDate: nil,
            discretionary: false, priority: 0, expectedBytesToSend: nil, expectedBytesToReceive: nil, bytesReceived: 0,
            bytesExpectedFromOrigin: nil, attempts: 0, httpStatus: nil, error: nil, sha256: nil, expectedSHA256: nil, webhookURL: nil,
            headers: [], overwrite: false, validator: nil, createdAt: 0, startedAt: nil, finishedAt: nil, runAt: 0, nextAttemptAt: nil,
            hostKey: "")
        let fields = Mirror(reflecting: everyFieldSet("01A", variant: 3, state: .running, revision: 7)).children
        let defaults = Mirror(reflecting: unread).children
        for (field, unset) in zip(fields, defaults) {
            #expect(String(reflecting: field.value) != String(reflecting: unset.value), "\(field.label ?? "?") is at its default")
        }
    }

    /// Each column writes the kind it declares, by which a backend reads its cells back.
    @Test func eachColumnWritesItsKind() {
        func kind(_ value: ColumnValue) -> ColumnKind? {
            switch value {
            case .null: nil
            case .text: .text
            case .integer: .integer
            case .real: .real
            case .bool: .bool
            }
        }
        let values = columnValues(everyFieldSet("01A", variant: 3, state: .running, revision: 7))
        for (value, column) in zip(values, DownloadTable.columns) {
            #expect(kind(value) == column.kind, "\(column.name)")
        }
    }

    @Test func namesAreUnique() {
        #expect(Set(DownloadTable.names).count == DownloadTable.columns.count)
        #expect(DownloadTable.names.allSatisfy { name in name.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "_" } })
    }

    /// Who writes what, as `JobStore.apply` and `JobStore.change` document it.
    @Test func ownersAreAsDocumented() {
        func names(_ owner: ColumnOwner) -> [String] { DownloadTable.columns.filter { $0.owner == owner }.map(\.name) }
        #expect(names(.key) == ["id"])
        #expect(names(.store) == ["revision"])
        #expect(Set(names(.client)) == [
            "url", "host_key", "headers", "priority", "earliest_begin_at", "discretionary", "webhook_url", "metadata",
            "mirrors", "max_bytes_per_second",
        ])
        #expect(DownloadTable.clientOwned == Set(names(.client)))
        #expect(DownloadTable.clientColumns.names == names(.client))
        #expect(DownloadTable.stateColumns.names == names(.state))
        #expect(names(.attempt) == ["object_upload"])
        #expect(names(.state).count == DownloadTable.columns.count - names(.client).count - names(.attempt).count - 2)
        // An INSERT writes all but the store's; nothing writes the key after it.
        #expect(DownloadTable.insertColumns.names == DownloadTable.names.filter { $0 != "revision" })
        #expect(DownloadTable.allColumns.names == DownloadTable.names)
    }

    /// The id is read first, for the errors of the columns after it; the revision last, so that
    /// a snapshot logged before an upgrade added columns reads them as added before it.
    @Test func theKeyComesFirstAndTheRevisionLast() {
        #expect(DownloadTable.columns.first?.owner == .key)
        #expect(DownloadTable.columns.last?.owner == .store)
        #expect(DownloadTable.position(of: "id") == 0 && DownloadTable.position(of: "revision") == DownloadTable.columns.count - 1)
    }

    /// A value its field cannot take is a store error that names the job and the column, never
    /// a guess at what the job was.
    @Test(arguments: [
        ("state", ColumnValue.text("exploded")),
        ("checksum", .text("md5:not-hex")),
        ("headers", .text("[{\"name\":1}")),
        ("mirrors", .text("{\"a\":1}")),
        ("ranges", .text("9-1-5")),
        ("object_upload", .text("key only")),
        ("url", .null),
        ("attempts", .text("three")),
        ("discretionary", .integer(1)),
        ("priority", .integer(1)),
    ])
    func anUnreadableValueIsAnErrorNamingTheColumn(_ column: String, _ value: ColumnValue) throws {
        var values = columnValues(everyFieldSet("01A", variant: 1))
        values[DownloadTable.position(of: column)] = value
        #expect {
            try DownloadTable.download(from: Cells(values))
        } throws: { error in
            let unreadable = error as? UnreadableJob
            return unreadable?.id == "01A" && unreadable?.column == column && "\(error)".contains(column) && "\(error)".contains("01A")
        }
    }

    /// A row without a column is an error naming it; one whose id cannot be read says so.
    @Test func aMissingColumnOrIdIsAnError() {
        let values = columnValues(everyFieldSet("01A", variant: 1))
        #expect(throws: UnreadableJob(id: "01A", column: "ranges", problem: "is missing")) {
            try DownloadTable.download(from: Cells(Array(values.prefix(DownloadTable.position(of: "ranges")))))
        }
        #expect(throws: UnreadableJob(id: nil, column: "id", problem: "is NULL")) {
            try DownloadTable.download(from: Cells([.null] + values.dropFirst()))
        }
    }

    /// What the headers column holds is never part of the error: they may be credentials.
    @Test func theErrorQuotesNoHeaders() {
        var values = columnValues(everyFieldSet("01A", variant: 1))
        values[DownloadTable.position(of: "headers")] = .text(#"[{"name":"Authorization","value":"Bearer secret"}"#)
        #expect { try DownloadTable.download(from: Cells(values)) } throws: { !"\($0)".contains("secret") }
    }

    @Test func aStateReadAloneIsReadAsInItsRow() throws {
        #expect(try DownloadTable.state(.text("paused"), ofJob: "01A") == .paused)
        #expect(throws: UnreadableJob(id: "01A", column: "state", problem: #"holds "exploded", not a state"#)) {
            try DownloadTable.state(.text("exploded"), ofJob: "01A")
        }
    }

    /// A client's change carried onto the scheduler's copy of a running job: every client field
    /// but the host the job runs against; no field of the state's.
    @Test func aRunningJobTakesEveryClientFieldButItsHost() {
        let running = everyFieldSet("01A", variant: 1, state: .running, revision: 1)
        let changed = everyFieldSet("01A", variant: 2, state: .queued, revision: 2)
        let taken = columnValues(running.takingClientFields(from: changed))
        let before = columnValues(running), client = columnValues(changed)
        for (index, column) in DownloadTable.columns.enumerated() {
            let carried = column.owner == .client && column.name != "host_key"
            #expect(taken[index] == (carried ? client : before)[index], "\(column.name)")
            #expect(column.owner == .key || before[index] != client[index], "\(column.name) must differ to be seen")
        }
    }
}
