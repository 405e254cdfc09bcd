package scan_test

import (
	"fmt"
	"testing"
	"time"

	"scan/internal/scan"
)

// The source is paged in (renews_at, id) order, then, for the first window
// group, the rows with no renews_at in id order. Ties on renews_at and the
// switch between the two phases must neither skip nor repeat a row,
// whatever the page size.
func TestPagingNeitherSkipsNorRepeats(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 2, 3, 5, 100} {
		t.Run(fmt.Sprint(batch), func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			for i := range 7 { // one instant: ties broken by id
				e.insert(sub{id: fmt.Sprintf("tie_%d", 6-i), email: fmt.Sprintf("t%d@x.com", i), renewsIn: 48 * time.Hour})
			}
			for i := range 4 {
				e.insert(sub{id: fmt.Sprintf("a_%d", i), email: fmt.Sprintf("a%d@y.com", i), renewsIn: 30*time.Hour + time.Duration(i)*time.Hour})
			}
			// Rows with no renews_at (one with an empty id) are invalid.
			if _, err := e.db.Exec(`INSERT INTO subscriptions (id, email, renews_at, period_start)
				SELECT x, 'n@x.com', NULL, '2026-12-01' FROM unnest(ARRAY['', 'n_1', 'n_2', 'n_3', 'n_4']) x`); err != nil {
				t.Fatal(err)
			}
			size := func(c *scan.Config) { c.BatchSize = batch }
			s := e.mustPass(size)
			if s.Minted != 11 || s.Sent != 11 || s.Invalid != 5 || s.Suppressed != 0 {
				t.Fatalf("first pass = %+v", s)
			}
			if e.smtp.Total() != 11 {
				t.Fatalf("SMTP received %d, want 11", e.smtp.Total())
			}
			s = e.mustPass(size)
			if s.Minted != 0 || s.Sent != 0 || s.Invalid != 5 || s.Suppressed != 11 || s.Eligible != 11 {
				t.Fatalf("second pass = %+v", s)
			}
		})
	}
}

// A re-run with nothing new settles each group with one count: the
// summary is the same as when the stream ran.
func TestRerunWithNothingNewCountsSuppressed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.many(25, "example.com")
	e.insert(sub{id: "ca", email: "ca@x.com", jurisdiction: "US-CA", renewsIn: 20 * 24 * time.Hour})
	if s := e.mustPass(); s.Minted != 26 {
		t.Fatalf("first pass = %+v", s)
	}
	s := e.mustPass()
	if s.Minted != 0 || s.Suppressed != 26 || s.Eligible != 26 || s.Invalid != 0 {
		t.Fatalf("re-run = %+v", s)
	}
}
