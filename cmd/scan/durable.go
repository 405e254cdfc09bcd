package main

import (
	"context"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/ledger"
)

// warnAsyncStandbys warns, once when a pass or a schedule starts, when the
// ledger's server is a primary whose standbys are all asynchronous: a
// failover to one of them loses the claims it had not received, and the
// next pass then refuses (exit 4) until `scan recover`. A server that does
// not let this role read it (or any error) says nothing: the warning is
// advice, never a reason to stop. It also warns when the role may not
// read which standby is synchronous: a switchover would then refuse.
func warnAsyncStandbys(ctx context.Context, log zerolog.Logger, db *sqlx.DB) {
	r, err := ledger.ReplicationOf(ctx, db)
	if err == nil && r.SyncHidden() {
		log.Warn().Int("standbys", r.Standbys).
			Msg("this role may not read pg_stat_replication's sync_state: a switchover to the synchronous standby " +
				"will refuse like a lossy failover (exit 4); grant pg_monitor (docs/recovery-ha.md)")
	}
	if err != nil || !r.AllAsync() {
		return
	}
	log.Warn().Int("standbys", r.Standbys).Str("synchronous_standby_names", r.SyncNames).
		Msg("the ledger's server streams only to asynchronous standbys: a failover to one of them can lose the last claims " +
			"(the next pass then refuses with exit 4 until `scan recover`); make a standby synchronous " +
			"(synchronous_standby_names, synchronous_commit on or remote_apply) to lose nothing")
}
