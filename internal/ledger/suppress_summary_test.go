package ledger_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/pgtest"
)

// at24 returns a digest that starts with the 24 bits i (the summary's
// bit), the rest of it from tag.
func at24(i uint32, tag string) []byte {
	d := sha256.Sum256([]byte(tag))
	d[0], d[1], d[2] = byte(i>>16), byte(i>>8), byte(i)
	return d[:]
}

func listed(d ...[]byte) []ledger.Suppression {
	var out []ledger.Suppression
	for _, x := range d {
		out = append(out, ledger.Suppression{Channel: "email", Digest: x, Reason: "test", Source: ledger.SuppressedByOperator})
	}
	return out
}

func loadSummary(t *testing.T, db sqlx.QueryerContext) *ledger.SuppressionSummary {
	t.Helper()
	s, err := ledger.LoadSuppressionSummary(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func rebuild(t *testing.T, db *sqlx.DB) int {
	t.Helper()
	var n int
	if err := db.Get(&n, `SELECT notice_suppression_summary_rebuild()`); err != nil {
		t.Fatal(err)
	}
	return n
}

// The statement-level trigger sets the bit of every digest a bulk insert
// adds (one statement of 20,000 entries, and an import's batches of the
// API), and of an entry's new digest on update; the set equals what the
// rebuild computes from the list; a digest whose 24 bits no entry starts
// with misses.
func TestSuppressionSummaryTrigger(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	if s := loadSummary(t, db); s.Chunks() != 0 {
		t.Fatalf("empty list: %d chunks", s.Chunks())
	}
	if _, err := db.Exec(`INSERT INTO notice_suppression (channel, address_hmac, reason, source, created_at)
		SELECT 'email', sha256(('bulk-' || g)::bytea), 'bulk', 'import', now() FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	var batch []ledger.Suppression
	for i := range 1500 {
		batch = append(batch, listed(digest(fmt.Sprintf("api-%d", i)))...)
	}
	if _, err := ledger.SuppressionAdd(ctx, db, t0, batch); err != nil {
		t.Fatal(err)
	}
	moved, kept := at24(0x123456, "moved"), at24(0x123457, "old")
	if _, err := ledger.SuppressionAdd(ctx, db, t0, listed(kept)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE notice_suppression SET address_hmac = $1 WHERE address_hmac = $2`, moved, kept); err != nil {
		t.Fatal(err)
	}
	s := loadSummary(t, db)
	for i := 1; i <= 20000; i++ {
		if d := digest(fmt.Sprintf("bulk-%d", i)); !s.Hits(d) {
			t.Fatalf("bulk entry %d misses the summary", i)
		}
	}
	for _, e := range batch {
		if !s.Hits(e.Digest) {
			t.Fatalf("entry %x misses the summary", e.Digest[:4])
		}
	}
	if !s.Hits(moved) || !s.Hits(kept) {
		t.Fatalf("updated entry: new digest %v, old %v; want both set", s.Hits(moved), s.Hits(kept))
	}
	misses := 0
	for i := range 1000 {
		if !s.Hits(digest(fmt.Sprintf("not-listed-%d", i))) {
			misses++
		}
	}
	if misses < 900 { // about 21,500 bits of 2^24 are set: 0.13%
		t.Fatalf("%d of 1000 unlisted digests miss", misses)
	}
	// The old digest's bit stays set (a stale bit costs a probe); the
	// rebuild clears it, and nothing else.
	if n := rebuild(t, db); n != 1 {
		t.Fatalf("rebuild after the trigger changed %d chunks, want 1 (the updated entry's old bit)", n)
	}
	if n := rebuild(t, db); n != 0 {
		t.Fatalf("second rebuild changed %d chunks", n)
	}
}

// The rebuild computes the set from the list: entries written without
// the trigger get their bits, a deleted entry's bit is cleared (and its
// chunk kept, cleared, so a pass's refresh sees it), and a pass's copy
// follows through Refresh.
func TestSuppressionSummaryRebuild(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	a, b, gone := at24(0x000001, "a"), at24(0x000002, "b"), at24(0xfffff0, "gone")
	if _, err := ledger.SuppressionAdd(ctx, db, t0, listed(gone)); err != nil {
		t.Fatal(err)
	}
	tx := db.MustBegin()
	tx.MustExec(`SET LOCAL session_replication_role = replica`) // no trigger fires
	tx.MustExec(`INSERT INTO notice_suppression (channel, address_hmac, reason, source, created_at) VALUES ('email', $1, 'x', 'import', now()), ('sms', $2, 'x', 'import', now())`, a, b)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	s := loadSummary(t, db)
	if s.Hits(a) || s.Hits(b) || !s.Hits(gone) {
		t.Fatalf("before the rebuild: %v %v %v", s.Hits(a), s.Hits(b), s.Hits(gone))
	}
	if ok, err := ledger.SuppressionRemove(ctx, db, "email", [][]byte{gone}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if n := rebuild(t, db); n != 2 { // a's and b's chunk (one), gone's (cleared)
		t.Fatalf("rebuild changed %d chunks, want 2", n)
	}
	if err := s.Refresh(ctx, db); err != nil {
		t.Fatal(err)
	}
	if !s.Hits(a) || !s.Hits(b) || s.Hits(gone) {
		t.Fatalf("after the rebuild: %v %v %v", s.Hits(a), s.Hits(b), s.Hits(gone))
	}
}

// The migration builds the summary of a list that is already there.
func TestSuppressionSummaryMigration(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	if err := ledger.MigrateTo(ctx, db.DB, 41); err != nil {
		t.Fatal(err)
	}
	a := at24(0xabcdef, "before")
	if _, err := ledger.SuppressionAdd(ctx, db, t0, listed(a)); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	if s := loadSummary(t, db); !s.Hits(a) || s.Chunks() != 1 {
		t.Fatalf("after the migration: hit %v, %d chunks", s.Hits(a), s.Chunks())
	}
}

// Writers may commit in another order than they wrote: a chunk written by
// a transaction still open at a refresh, committed after a later writer's
// chunk was read, is read by the next refresh (the read keeps its
// snapshot's xmin, not the highest change it saw).
func TestSuppressionSummaryCommitOrder(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	early, late := at24(0x100000, "early"), at24(0x200000, "late")
	s := loadSummary(t, db)
	tx := db.MustBegin()
	defer tx.Rollback()
	if _, err := ledger.SuppressionAdd(ctx, tx, t0, listed(early)); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.SuppressionAdd(ctx, db, t0, listed(late)); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(ctx, db); err != nil {
		t.Fatal(err)
	}
	if s.Hits(early) || !s.Hits(late) {
		t.Fatalf("while the early writer is open: %v %v", s.Hits(early), s.Hits(late))
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(ctx, db); err != nil {
		t.Fatal(err)
	}
	if !s.Hits(early) {
		t.Fatal("the early writer's entry, committed after a refresh that read a later one, misses")
	}
}

// A pass's summary, read at its start: an entry another session commits
// after that read is honoured by the next claim batch (it refreshes the
// summary in its transaction), by the claim and by the re-claim; a
// digest that misses the summary is not probed at all.
func TestClaimSummaryHonoursEntryAddedDuringPass(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	a, b, c := claim(1, 0), claim(2, 0), claim(3, 0)
	if _, err := ledger.Insert(ctx, db, opt("r1"), []ledger.Claim{c}); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.RecordOutcomes(ctx, db, "r1", t0, []ledger.Outcome{{Key: c.Key, PeriodStart: c.PeriodStart, State: ledger.Retry, Error: "451"}}); err != nil {
		t.Fatal(err)
	}
	o := opt("r2")
	o.Suppression, o.Summary = true, loadSummary(t, db) // the pass's start: an empty list
	if _, err := ledger.SuppressionAdd(ctx, db, t0, listed(digest("a@x"), digest("c@x"))); err != nil {
		t.Fatal(err)
	}
	a.AddressHMAC, b.AddressHMAC = digest("a@x"), digest("b@x")
	won, err := ledger.Insert(ctx, db, o, []ledger.Claim{a, b})
	if err != nil || len(won) != 2 || !won[0].Suppressed || won[1].Suppressed || won[0].Key != a.Key {
		t.Fatalf("claim: %+v, %v; want %s suppressed", won, err, a.Key[:8])
	}
	o.Now = t0.Add(time.Hour)
	won, err = ledger.ReclaimUnlessSuppressed(ctx, db, o, []string{c.Key}, [][]byte{digest("c@x")}, nil)
	if err != nil || len(won) != 1 || !won[0].Suppressed {
		t.Fatalf("re-claim: %+v, %v; want suppressed", won, err)
	}
	// A summary that does not have the digest's bit: the statement skips
	// the probe, and the listed claim goes through. (What the summary is
	// for: with 1M entries 94% of the claims are not probed.)
	stale := loadSummary(t, db)
	var next string
	if err := db.Get(&next, `SELECT pg_current_xact_id()::text`); err != nil {
		t.Fatal(err)
	}
	stale.ClearBits(next)
	o.Summary = stale
	d := claim(4, 0)
	d.AddressHMAC = digest("a@x")
	won, err = ledger.Insert(ctx, db, o, []ledger.Claim{d})
	if err != nil || len(won) != 1 || won[0].Suppressed {
		t.Fatalf("claim with the bit clear: %+v, %v; want not probed", won, err)
	}
}

// Across a secret rotation with the summary: an entry listed under a
// previous digest is found (the claim's previous digest hits), re-keyed
// under the current digest, and the re-keyed entry's bit is set.
func TestClaimSummaryRekey(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	keyB := []byte{0xb, 0xb, 0xb, 0xb, 0xb, 0xb, 0xb, 0xb}
	if _, err := ledger.SuppressionAdd(ctx, db, t0, listed(digest("A|gone@x"))); err != nil {
		t.Fatal(err)
	}
	o := opt("r1")
	o.Suppression, o.KeyID, o.Summary = true, keyB, loadSummary(t, db)
	if o.Summary.Hits(digest("B|gone@x")) {
		t.Skip("the current digest's bit is set by chance")
	}
	a, b := claim(1, 0), claim(2, 0)
	a.AddressHMAC, a.PreviousHMACs = digest("B|gone@x"), [][]byte{digest("A|gone@x")}
	b.AddressHMAC, b.PreviousHMACs = digest("B|ok@x"), [][]byte{digest("A|ok@x")}
	won, err := ledger.Insert(ctx, db, o, []ledger.Claim{a, b})
	if err != nil || len(won) != 2 || !won[0].Suppressed || won[1].Suppressed {
		t.Fatalf("claim: %+v, %v; want %s suppressed", won, err, a.Key[:8])
	}
	if got := keyedUnder(t, db, digest("B|gone@x")); got != "0b0b0b0b0b0b0b0b" {
		t.Fatalf("re-keyed entry: %s", got)
	}
	if s := loadSummary(t, db); !s.Hits(digest("B|gone@x")) {
		t.Fatal("the re-keyed entry's bit is not set")
	}
}

// BenchmarkLoadSuppressionSummary reads the summary of a list of
// 1M entries as a pass's start does, and
// refreshes it as each claim batch does when nothing changed.
func BenchmarkLoadSuppressionSummary(b *testing.B) {
	db := setup(b)
	ctx := context.Background()
	if _, err := db.Exec(`INSERT INTO notice_suppression (channel, address_hmac, reason, source, created_at)
		SELECT 'email', sha256(('bench-suppressed-' || g)::bytea), 'bench', 'import', now() FROM generate_series(1, 1000000) g`); err != nil {
		b.Fatal(err)
	}
	b.Run("load", func(b *testing.B) {
		for range b.N {
			if _, err := ledger.LoadSuppressionSummary(ctx, db); err != nil {
				b.Fatal(err)
			}
		}
	})
	s, err := ledger.LoadSuppressionSummary(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("refresh", func(b *testing.B) {
		for range b.N {
			if err := s.Refresh(ctx, db); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A role that may write the list but has no privilege on the summary
// (the pass's role before an operator grants it): its writes still set
// the bits (the trigger runs as the summary's owner), and reading the
// summary fails with ErrSummaryDenied, on which a pass probes every
// notice instead.
func TestSuppressionSummaryWithoutPrivilege(t *testing.T) {
	t.Parallel()
	db := sqlx.MustOpen("postgres", pgtest.DSN(t))
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if _, err := ledger.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one session: SET ROLE holds for every statement
	var schema string
	if err := db.Get(&schema, `SELECT current_schema()`); err != nil {
		t.Fatal(err)
	}
	role := schema + "_writer"
	for _, q := range []string{`CREATE ROLE ` + role + ` NOLOGIN`, `GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role,
		`GRANT SELECT, INSERT, DELETE ON notice_suppression TO ` + role, `SET ROLE ` + role} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		_, _ = db.Exec(`RESET ROLE`)
		_, _ = db.Exec(`DROP OWNED BY ` + role)
		_, _ = db.Exec(`DROP ROLE ` + role)
	})
	d := at24(0x0abcde, "by-role")
	if _, err := ledger.SuppressionAdd(ctx, db, t0, listed(d)); err != nil {
		t.Fatalf("add as a role without the summary: %v", err)
	}
	if _, err := ledger.LoadSuppressionSummary(ctx, db); !errors.Is(err, ledger.ErrSummaryDenied) {
		t.Fatalf("load as a role without the summary: %v, want ErrSummaryDenied", err)
	}
	if _, err := db.Exec(`RESET ROLE`); err != nil {
		t.Fatal(err)
	}
	if s := loadSummary(t, db); !s.Hits(d) {
		t.Fatal("the role's entry has no bit")
	}
}
