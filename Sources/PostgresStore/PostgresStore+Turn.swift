import Persistence

/// One turn of the scheduler: the attempts that ended and the claims for the slots they freed in
/// one transaction. The settled rows stay locked until the pass has taken the claim lock, which no
/// writer takes after locking rows, so no other transaction waits on both.
extension PostgresStore {
    public func applyAndClaim(_ changes: [StoreChange], _ pass: ClaimPass) throws -> (applied: [Bool], claim: ClaimResult) {
        let body = { (db: PostgresConnection) in (applied: try self.apply(changes, db), claim: try self.claim(db, pass)) }
        return try Self.changesState(changes) ? writeAnnouncingWork(body) : write(body)
    }
}
