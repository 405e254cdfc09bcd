package scan_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/message"
	"scan/internal/scan"
	"scan/internal/send"
	"scan/internal/subscription"
)

// newPass builds a pass as cmd/scan does: the relation "subscriptions"
// opened (subscription.Open, the start-up probe) for cfg's shard and its
// policy's anchors, then scan.New, which does no I/O. The tests built
// their passes with scan.New alone while New still probed the source.
func newPass(ctx context.Context, db *sqlx.DB, sender send.Sender, r *message.Renderer, log zerolog.Logger, cfg scan.Config) (*scan.Pass, error) {
	if cfg.Policy != nil {
		src, err := subscription.Open(ctx, db, "subscriptions", subscription.Shard{I: cfg.Shard, N: cfg.Shards}, subscription.Anchors(cfg.Policy))
		if err != nil {
			return nil, err
		}
		cfg.Source = src
	}
	return scan.New(db, sender, r, log, cfg)
}

// scan.New validates without I/O: given an opened source it builds a
// pass with no database at all, and it refuses a missing source, one
// opened for another shard, or one not opened for a kind's anchor.
func TestNewValidatesWithoutIO(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	cfg := scan.Config{Policy: e.pol, Secret: []byte(secret), RunID: "r", Now: now}
	src, err := subscription.Open(ctx, e.db, "subscriptions", subscription.Shard{}, subscription.Anchors(e.pol))
	if err != nil {
		t.Fatal(err)
	}
	withSource := cfg
	withSource.Source = src
	if _, err := scan.New(nil, nil, nil, zerolog.Nop(), withSource); err != nil {
		t.Fatalf("New with no database: %v", err)
	}
	otherShard, err := subscription.Open(ctx, e.db, "subscriptions", subscription.Shard{I: 1, N: 2}, subscription.Anchors(e.pol))
	if err != nil {
		t.Fatal(err)
	}
	noAnchors, err := subscription.Open(ctx, e.db, "subscriptions", subscription.Shard{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		src   *subscription.Source
		field string
	}{{nil, "source"}, {otherShard, "shard"}, {noAnchors, "notices[renewal_notice_t72].anchor"}} {
		c2 := cfg
		c2.Source = c.src
		_, err := scan.New(nil, nil, nil, zerolog.Nop(), c2)
		var ce *scan.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("source %v: err %v, want a ConfigError of %s", c.src, err, c.field)
		}
	}
}
