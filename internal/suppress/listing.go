package suppress

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/cli"
	"scan/internal/ledger"
)

// List is `scan suppress list`'s listing: at most limit entries, oldest
// first, without addresses (the digest's first 12 hex characters tell
// entries apart), each with label's name for the secret that keys it
// (Keys.Labels; "" for all without the secrets). With onlyPrevious, only
// the entries still keyed under a previous secret (prevIDs), the ones a
// rotation has not yet re-keyed: none when there is no previous secret.
func List(ctx context.Context, db sqlx.QueryerContext, limit int, label func(string) string, prevIDs []string, onlyPrevious bool) (*cli.Listing, error) {
	var list []ledger.Suppressed
	if !onlyPrevious || len(prevIDs) > 0 {
		var err error
		if list, err = ledger.SuppressionList(ctx, db, limit, prevIDs...); err != nil {
			return nil, err
		}
	}
	l := &cli.Listing{Header: []string{"channel", "digest", "reason", "source", "notice_key", "created_at", "key"}, Empty: "the suppression list is empty"}
	for _, s := range list {
		key := label(s.KeyID)
		l.Records = append(l.Records, listedEntry{s, key})
		l.Cells = append(l.Cells, []string{s.Channel, s.Digest, s.Reason, s.Source, s.NoticeKey, s.CreatedAt.UTC().Format(time.RFC3339), key})
	}
	return l, nil
}

// listedEntry is an entry as `scan suppress list` prints it.
type listedEntry struct {
	ledger.Suppressed
	Key string `json:"key,omitempty"`
}
