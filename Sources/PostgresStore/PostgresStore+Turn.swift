import Persistence

/// One turn of the scheduler: the attempts that ended and the claims for the slots they freed in
/// one transaction. The claim lock comes first: the settlement's writes lock rows other nodes'
/// claim passes write too (the counts kept by the jobs table's triggers), so a turn that took the
/// lock after them could wait for a pass that waits for it (PostgreSQL would end one as deadlocked).
extension PostgresStore {
    public func applyAndClaim(_ changes: [StoreChange], _ pass: ClaimPass) throws -> (applied: [Bool], claim: ClaimResult) {
        let body = { (db: PostgresConnection) in
            try db.execute(AdvisoryLock.claims)
            return (applied: try self.apply(changes, db), claim: try self.claim(db, pass, holdingClaimLock: true))
        }
        return try Self.changesState(changes) ? writeAnnouncingWork(body) : write(body)
    }
}
