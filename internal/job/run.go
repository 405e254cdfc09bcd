package job

import (
	"context"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/scan"
	"scan/internal/usage"
)

// Run builds one pass at now (Pass), runs it under its observer and
// closes its sender: one firing of `scan schedule`. A pass that could
// not start returns the zero Summary with the error.
func (c *Config) Run(ctx context.Context, db *sqlx.DB, now time.Time) (scan.Summary, error) {
	sc, obs, closeSender, err := c.Pass(ctx, db, now)
	if err != nil {
		return scan.Summary{}, err
	}
	defer closeSender()
	return obs.Run(ctx, sc)
}

// Final reports whether err ends a job rather than one pass: a
// configuration error (a usage.Error: the pass's settings, the source
// relation, a sender's) or a refusal (the ledger's database restored or
// failed over), which no later pass can get past before a person acts
// (`scan recover` for a refusal).
func Final(err error) bool {
	var ue *usage.Error
	return errors.As(err, &ue) || errors.Is(err, ledger.ErrRestored)
}
