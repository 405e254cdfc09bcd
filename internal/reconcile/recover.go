package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

// ReadClassified reads the events in r as Apply does (ReadFormat, in any
// of Formats), completes each with its kind and calls fn with it: what
// `scan recover --events` applies with ledger.Recover instead of
// ledger.Settle.
func ReadClassified(r io.Reader, format string, fn func(ledger.Settlement) error) (Stats, error) {
	return ReadFormat(r, format, func(s ledger.Settlement) error {
		classify(&s)
		return fn(s)
	})
}

// Recovery is one `scan recover`: the provider's record since Since
// (Read feeds it to Record), or, with NoneLost, the acknowledgement alone.
type Recovery struct {
	Since      time.Time // the restore point; zero: none given (NoneLost only)
	NoneLost   bool
	Read       func(add func(ledger.Settlement) error) error
	Reason, By string
	RunID      string
	Now        func() time.Time
	// Events or Ask name where Read takes the record from (a file, - for
	// stdin, or a provider's API), Events in Format: what Validate checks.
	Events, Ask, Format string
}

// RecoverReport is what Recover did, as `scan recover` prints it.
type RecoverReport struct {
	Since *time.Time `json:"since,omitempty"`
	RecordResult
	Epoch *ledger.Epoch `json:"epoch,omitempty"`
	// NoEpoch says why no epoch was recorded (a server without a
	// timeline: its passes check nothing, so there is no refusal to lift).
	NoEpoch error `json:"-"`
}

// Recover applies r's record (Record), then records the acknowledged
// epoch (after the whole record is in: a recovery that stopped half-way
// lifts nothing), which lifts the passes' refusal after a restore.
func Recover(ctx context.Context, db *sqlx.DB, r Recovery) (RecoverReport, error) {
	var rep RecoverReport
	if !r.Since.IsZero() {
		rep.Since = &r.Since
	}
	kind, reason := ledger.EpochNoneLost, r.Reason
	if !r.NoneLost {
		var err error
		if rep.RecordResult, err = Record(ctx, db, r.By, r.Now, r.Read); err != nil {
			return rep, err
		}
		kind = ledger.EpochRecover
		if reason == "" {
			reason = fmt.Sprintf("provider record since %s: %d recorded, %d already known, %d unknown",
				r.Since.UTC().Format(time.RFC3339), rep.Recorded, rep.AlreadyKnown, rep.Unknown)
		}
	}
	ep, err := ledger.Acknowledge(ctx, db, kind, r.RunID, r.By, reason, r.Since, r.Now().UTC())
	switch {
	case errors.Is(err, ledger.ErrNoTimeline):
		rep.NoEpoch = err
	case err != nil:
		return rep, err
	default:
		rep.Epoch = &ep
	}
	return rep, nil
}
