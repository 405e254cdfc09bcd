package subscription_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/ledger/ledgertest"
	"scan/internal/pgtest"
	"scan/internal/subscription"
	"scan/sql/reference"
)

// setup returns a migrated database with the reference subscriptions
// table.
func setup(t *testing.T) *sqlx.DB {
	t.Helper()
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := ledger.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, reference.Subscriptions); err != nil {
		t.Fatal(err)
	}
	return db
}

var renewal = []subscription.Anchor{{Kind: "renewal_notice_t72", Column: "renews_at"}}

// Moved from internal/scan (scan_test.go) with the probe: a relation
// without a required column, or a name that tries to be SQL, is refused
// at start-up, and nothing is written.
func TestSourceMustHaveTheColumns(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	if _, err := db.Exec(`CREATE VIEW partial AS SELECT id, email, status, renews_at, period_start, jurisdiction FROM subscriptions`); err != nil {
		t.Fatal(err)
	}
	_, err := subscription.Open(ctx, db, "partial", subscription.Shard{}, renewal)
	if err == nil || !strings.Contains(err.Error(), `"notice_revision"`) {
		t.Fatalf("err = %v", err)
	}
	_, err = subscription.Open(ctx, db, "subscriptions; DROP TABLE notice_ledger", subscription.Shard{}, renewal)
	if err == nil {
		t.Fatal("an injected source was accepted")
	}
	if _, err := ledgertest.CountByState(ctx, db); err != nil {
		t.Fatalf("ledger damaged: %v", err)
	}
}

// Moved from internal/scan (content_test.go) with the probe: a kind
// whose anchor column the source lacks stops the pass at start-up,
// naming the column; an anchor that is not a timestamptz too.
func TestMissingAnchorColumnIsAConfigError(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	anchors := append([]subscription.Anchor{}, renewal[0], subscription.Anchor{Kind: "trial_ending", Column: "price_changes_at"})
	_, err := subscription.Open(ctx, db, "subscriptions", subscription.Shard{}, anchors)
	if err == nil || !strings.Contains(err.Error(), `"price_changes_at"`) {
		t.Fatalf("err = %v, want one naming price_changes_at", err)
	}
	var ce *subscription.ConfigError
	if !errors.As(err, &ce) || ce.Field != "notices[trial_ending].anchor" {
		t.Fatalf("err %T (%v) is not a *subscription.ConfigError of the kind's anchor", err, err)
	}
	if _, err := db.Exec(`ALTER TABLE subscriptions ADD COLUMN price_changes_at date`); err != nil {
		t.Fatal(err)
	}
	if _, err = subscription.Open(ctx, db, "subscriptions", subscription.Shard{}, anchors); err == nil || !strings.Contains(err.Error(), "timestamptz") {
		t.Fatalf("a date anchor: err = %v, want one asking for timestamptz", err)
	}
}

// Open names the field of each refusal: a relation that does not exist,
// a shard that is not one; and it reads only the anchors it was opened
// with.
func TestOpenRefusals(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	for _, c := range []struct {
		relation string
		shard    subscription.Shard
		field    string
	}{
		{"billing.subs", subscription.Shard{}, "source"},
		{"a.b.c", subscription.Shard{}, "source"},
		{"subscriptions", subscription.Shard{I: 2, N: 2}, "shard"},
		{"subscriptions", subscription.Shard{I: -1}, "shard"},
	} {
		_, err := subscription.Open(ctx, db, c.relation, c.shard, renewal)
		var ce *subscription.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("Open(%q, %+v) = %v, want a ConfigError of %s", c.relation, c.shard, err, c.field)
		}
	}
	src, err := subscription.Open(ctx, db, "", subscription.Shard{}, renewal)
	if err != nil {
		t.Fatal(err)
	}
	if src.Shard() != (subscription.Shard{I: 0, N: 1}) || !src.Reads("renews_at") || src.Reads("trial_ends_at") {
		t.Fatalf("shard %+v, reads renews_at %v, trial_ends_at %v", src.Shard(), src.Reads("renews_at"), src.Reads("trial_ends_at"))
	}
	if _, err := src.Get(ctx, db, "renews_at", "nobody"); !errors.Is(err, subscription.ErrNotFound) {
		t.Fatalf("Get of no row: %v, want ErrNotFound", err)
	}
	if _, err := src.Get(ctx, db, "trial_ends_at", "nobody"); err == nil || errors.Is(err, subscription.ErrNotFound) {
		t.Fatalf("Get by an anchor not opened: %v, want an error", err)
	}
}
