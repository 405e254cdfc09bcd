package scan_test

import (
	"context"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/notice"
)

func suppressEmail(t *testing.T, e *env, addrs ...string) {
	t.Helper()
	h, err := notice.NewAddressHasher([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	var entries []ledger.Suppression
	for _, a := range addrs {
		n, err := notice.NormalizeEmail(a)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, ledger.Suppression{Channel: "email", Digest: h.Digest("email", n), Reason: "test", Source: ledger.SuppressedByOperator})
	}
	if _, err := ledger.SuppressionAdd(context.Background(), e.db, now, entries); err != nil {
		t.Fatal(err)
	}
}

// An address on the suppression list (in any case) is not mailed: the
// notice is recorded failed with reason suppressed_address and counted;
// the others go out; the next pass sends nothing more.
func TestSuppressedAddressIsNotMailed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.insert(
		sub{id: "ok", email: "ok@x.com", renewsIn: 48 * time.Hour},
		sub{id: "gone", email: "Gone@X.com", renewsIn: 48 * time.Hour},
	)
	suppressEmail(t, e, "gone@x.com", "other@y.com")
	s := e.mustPass()
	if s.SuppressedAddress != 1 || s.Minted != 1 || s.Sent != 1 || s.Eligible != 2 {
		t.Fatalf("summary %+v", s)
	}
	if e.smtp.Total() != 1 || e.smtp.Count(msgID("ok", 0)) != 1 {
		t.Fatalf("SMTP received %d", e.smtp.Total())
	}
	r, err := ledger.Get(context.Background(), e.db, keyOf("gone", 0))
	if err != nil {
		t.Fatal(err)
	}
	if r.State != ledger.Failed || r.LastError == nil || *r.LastError != ledger.ReasonSuppressed || r.Attempts != 0 {
		t.Fatalf("suppressed row %+v", r)
	}
	s = e.mustPass()
	if s.Minted != 0 || s.SuppressedAddress != 0 || e.smtp.Total() != 1 {
		t.Fatalf("second pass %+v, SMTP %d", s, e.smtp.Total())
	}
}

// A retry row whose address has since been suppressed is failed, not
// re-claimed.
func TestSuppressedRetryIsNotReclaimed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.insert(sub{id: "r", email: "r@x.com", renewsIn: 48 * time.Hour})
	ctx := context.Background()
	c := ledger.Claim{Key: keyOf("r", 0), Tuple: notice.Tuple{SubscriptionID: "r", Kind: "renewal_notice_t72", PeriodStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		RenewsAt: now.Add(48 * time.Hour), WindowClosesAt: now.Add(24 * time.Hour), Domain: "x.com"}
	if _, err := ledger.Insert(ctx, e.db, ledger.ClaimOptions{State: ledger.Claimed, Now: now.Add(-time.Hour), RunID: "old"}, []ledger.Claim{c}); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.RecordOutcomes(ctx, e.db, "old", now, []ledger.Outcome{{Key: c.Key, PeriodStart: c.PeriodStart, State: ledger.Retry, Error: "451"}}); err != nil {
		t.Fatal(err)
	}
	suppressEmail(t, e, "r@x.com")
	s := e.mustPass()
	if s.Retried != 0 || s.SuppressedAddress != 1 || e.smtp.Total() != 0 || e.state("r") != ledger.Failed {
		t.Fatalf("summary %+v, state %s, SMTP %d", s, e.state("r"), e.smtp.Total())
	}
}
