package main

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/observe"
	"scan/internal/scan"
)

// passRecord writes a pass's start and end to notice_pass (sql/0025),
// which `scan status` reads. A record that cannot be written is logged
// and never fails the pass: it is the operator's view, not the ledger.
// A nil *passRecord records nothing.
type passRecord struct {
	db            *sqlx.DB
	runID         string
	shard, shards int
	clock         func() time.Time
	redact        func(string) string
	log           zerolog.Logger
}

func newPassRecord(e *env, db *sqlx.DB, ps *preparedPass, runID string, log zerolog.Logger) *passRecord {
	return &passRecord{db: db, runID: runID, shard: ps.shard, shards: ps.shards, clock: e.clockNow, redact: e.redact, log: log}
}

func (r *passRecord) start(ctx context.Context) {
	if r == nil {
		return
	}
	if err := ledger.PassStarted(ctx, r.db, r.runID, r.shard, r.shards, r.clock()); err != nil {
		r.log.Warn().Err(err).Msg("could not record the pass's start for scan status; the pass goes on")
	}
}

// end records the pass's end even when ctx was cancelled (SIGTERM), as
// the metrics push does.
func (r *passRecord) end(ctx context.Context, sum scan.Summary, runErr error) {
	if r == nil {
		return
	}
	failure := ""
	if runErr != nil {
		failure = oneLine(r.redact(runErr.Error()))
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), observe.PushTimeout)
	defer cancel()
	if err := ledger.PassEnded(ectx, r.db, r.runID, failure, sum.Counts(), r.clock()); err != nil {
		r.log.Warn().Err(err).Msg("could not record the pass's end for scan status")
	}
}
