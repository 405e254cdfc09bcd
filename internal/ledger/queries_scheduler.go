package ledger

// The statements of `scan schedule`'s lock (package schedule), which keeps
// two schedulers (on two hosts) from running passes at once: PostgreSQL's
// transaction-level advisory lock (736361, 1), held by a transaction left
// open for the whole pass. A transaction, not a session, holds it so that
// it survives PgBouncer's transaction pooling: PgBouncer keeps one server
// connection for an open transaction, and hands a session-level lock's
// connection to other clients between transactions. Neither touches a
// row of the ledger, and neither takes a parameter (the simple query
// protocol: nothing to split over two server connections).

// schedulerLockTry takes the lock in the transaction it runs in, if it is
// free, and says whether it did; it never waits. It also turns off, for
// that transaction only, a server's or role's
// idle_in_transaction_session_timeout, which would end the lock's
// transaction while the pass runs on other connections.
const schedulerLockTry = `
SELECT set_config('idle_in_transaction_session_timeout', '0', true) IS NOT NULL
       AND pg_try_advisory_xact_lock(736361, 1)`

// schedulerLockAlive checks, during the pass, that the lock's transaction
// (and so the lock) is still there.
const schedulerLockAlive = `SELECT 1`
