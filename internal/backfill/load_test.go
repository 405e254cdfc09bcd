package backfill_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/backfill"
	"scan/internal/ledger"
	"scan/internal/ledger/ledgertest"
	"scan/internal/notice"
	"scan/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const secret = "backfill-test-secret-0123456789abcdef"

func keyer(t *testing.T) *notice.Keyer {
	t.Helper()
	k, err := notice.NewKeyer([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func setup(t *testing.T) *sqlx.DB {
	t.Helper()
	db := pgtest.New(t)
	if _, err := ledger.Migrate(context.Background(), db.DB); err != nil {
		t.Fatal(err)
	}
	return db
}

func read(t *testing.T, csv string) []backfill.Record {
	t.Helper()
	recs, err := backfill.Read(strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// Each record gets the key of the contract (HMAC-SHA256 of
// id|period|kind|revision) and the Message-ID a pass would have given it,
// without angle brackets.
func TestNotices(t *testing.T) {
	t.Parallel()
	recs := read(t, "sub_1,2026-12-01,renewal_notice_t72,0,2026-11-29T09:00:00Z\n"+
		"sub_1,2026-12-01,renewal_notice_t72,1,2026-11-30T09:00:00+01:00\n")
	bs := backfill.Notices(recs, keyer(t), "notices.example.com")
	if len(bs) != 2 {
		t.Fatalf("%d notices", len(bs))
	}
	for i, material := range []string{"sub_1|2026-12-01|renewal_notice_t72|0", "sub_1|2026-12-01|renewal_notice_t72|1"} {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(material))
		want := hex.EncodeToString(mac.Sum(nil))
		b := bs[i]
		if b.Key != want {
			t.Errorf("%s: key %s, want %s", material, b.Key, want)
		}
		if b.MessageID != want[:32]+"@notices.example.com" {
			t.Errorf("%s: Message-ID %q", material, b.MessageID)
		}
		if b.SubscriptionID != "sub_1" || b.Kind != "renewal_notice_t72" || b.Revision != i || b.PeriodStart.Format("2006-01-02") != "2026-12-01" || !b.SentAt.Equal(recs[i].SentAt) {
			t.Errorf("notice %d = %+v", i, b)
		}
	}
}

// Import writes the notices as sent, in their month's partition; a notice
// already in the ledger, by key or (under another secret) by its business
// tuple, is counted and left as it is.
func TestImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := setup(t)
	// sub_3's notice was claimed by a pass under another secret.
	other, _ := notice.NewKeyer([]byte("another-secret-0123456789abcdef0123"))
	ps := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	claimed := other.Key(notice.Tuple{SubscriptionID: "sub_3", PeriodStart: ps, Kind: "renewal_notice_t72"})
	if won, err := ledger.Insert(ctx, db, ledger.ClaimOptions{State: ledger.Claimed, Now: ps, RunID: "pass"}, []ledger.Claim{{
		Key: claimed, Tuple: notice.Tuple{SubscriptionID: "sub_3", Kind: "renewal_notice_t72", PeriodStart: ps},
		RenewsAt: ps, WindowClosesAt: ps, Domain: "example.com", MessageID: claimed[:32] + "@n.example.com"}}); err != nil || len(won) != 1 {
		t.Fatalf("claim: %v %v", won, err)
	}
	bs := backfill.Notices(read(t, "sub_1,2027-01-01,renewal_notice_t72,0,2026-12-29T09:00:00Z\n"+
		"sub_2,2027-02-01,renewal_notice_t72,0,2027-01-29T09:00:00Z\n"+
		"sub_3,2027-01-01,renewal_notice_t72,0,2026-12-29T09:00:00Z\n"), keyer(t), "n.example.com")
	n, err := backfill.Import(ctx, db, "backfill-1", bs)
	if err != nil || n != 2 {
		t.Fatalf("import: %d, %v; want 2", n, err)
	}
	if n, err := backfill.Import(ctx, db, "backfill-2", bs); err != nil || n != 0 {
		t.Fatalf("import again: %d, %v; want 0", n, err)
	}
	for _, b := range bs[:2] {
		r, err := ledger.Get(ctx, db, b.Key)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != ledger.Sent || r.SentAt == nil || !r.SentAt.Equal(b.SentAt) || r.MessageID == nil || *r.MessageID != b.MessageID || r.RunID != "backfill-1" {
			t.Errorf("%s: %+v", b.SubscriptionID, r)
		}
	}
	if r, err := ledger.Get(ctx, db, claimed); err != nil || r.State != ledger.Claimed {
		t.Fatalf("the claimed notice: %+v, %v", r, err)
	}
	var stray int
	if err := db.Get(&stray, `SELECT count(*) FROM notice_ledger_default`); err != nil || stray != 0 {
		t.Fatalf("%d rows in the DEFAULT partition, %v", stray, err)
	}
}

// One transaction: a row the database refuses in the second chunk of
// 1000 leaves nothing of the first.
func TestImportIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := setup(t)
	var csv strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&csv, "sub_%d,2027-01-01,renewal_notice_t72,0,2026-12-29T09:00:00Z\n", i)
	}
	bs := backfill.Notices(read(t, csv.String()), keyer(t), "n.example.com")
	bs[1200].SubscriptionID = "sub_\x00" // PostgreSQL text takes no NUL
	if n, err := backfill.Import(ctx, db, "backfill-1", bs); err == nil || !strings.Contains(err.Error(), "0x00") {
		t.Fatalf("import of a refused row: %d inserted, %v; want PostgreSQL's refusal of the NUL", n, err)
	}
	if c, err := ledgertest.CountByState(ctx, db); err != nil || len(c) != 0 {
		t.Fatalf("a failed import left %v, %v", c, err)
	}
	bs[1200].SubscriptionID = "sub_1200"
	if n, err := backfill.Import(ctx, db, "backfill-2", bs); err != nil || n != 1500 {
		t.Fatalf("import: %d, %v", n, err)
	}
}

// Prepare keeps one row per notice of a file that lists a send twice,
// and the Report counts the file's lines, its notices, what was inserted
// and what the ledger already held; a bad line is a *LineError.
func TestPrepareAndReport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := setup(t)
	file := "subscription_id,period_start,kind,revision,sent_at\n" +
		"sub_1,2027-01-01,renewal_notice_t72,0,2026-12-29T09:00:00Z\n" +
		"sub_1,2027-01-01,renewal_notice_t72,0,2026-12-29T08:00:00Z\n" +
		"sub_2,2027-01-01,renewal_notice_t72,,2026-12-29T09:00:00Z\n"
	b, err := backfill.Prepare(strings.NewReader(file), keyer(t), "n.example.com")
	if err != nil || b.Sends != 3 || len(b.Notices) != 2 || b.Notices[0].SentAt.Hour() != 8 {
		t.Fatalf("prepare: %+v, %v", b, err)
	}
	for i, want := range []backfill.Report{{Inserted: 2, Lines: 3, Notices: 2}, {AlreadyInLedger: 2, Lines: 3, Notices: 2}} {
		if rep, err := b.Import(ctx, db, fmt.Sprintf("backfill-%d", i)); err != nil || rep != want {
			t.Fatalf("import %d: %+v, %v; want %+v", i, rep, err, want)
		}
	}
	var le *backfill.LineError
	if _, err := backfill.Prepare(strings.NewReader("sub_1,2027-01-01\n"), keyer(t), "n.example.com"); !errors.As(err, &le) || le.Line != 1 {
		t.Fatalf("a short line: %v", err)
	}
}
