/// The advisory locks fetchd takes, all in PostgreSQL's two-key form (`pg_advisory_xact_lock(int, int)`)
/// so that its namespaces cannot collide. Each is a transaction lock: released at commit or rollback.
/// Advisory locks span a whole database, so the first two are per schema: fetchd installations in
/// separate schemas of one database do not wait for each other.
enum AdvisoryLock {
    /// Serialises schema migrations of nodes starting together.
    static let migrations = "SELECT pg_advisory_xact_lock(1, hashtext(current_schema()))"
    /// Serialises claim passes across nodes, so each reads the running load its predecessor left.
    static let claims = "SELECT pg_advisory_xact_lock(2, hashtext(current_schema()))"
    /// Serialises the "was that the session's last live job?" check per session. Parameter: the session.
    static let session = "SELECT pg_advisory_xact_lock(3, hashtext($1::text))"
}
