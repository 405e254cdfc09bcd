package schedule_test

import (
	"testing"
	"time"

	"scan/internal/policy"
	"scan/internal/schedule"
)

// robfig/cron evaluates an expression without CRON_TZ in the location of
// the time it is given; Next passes UTC, so the host's TZ never decides
// when passes run.
func TestNextEvaluatesInUTC(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	s, err := policy.ParseSchedule("0 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, ny) // 16:00 UTC
	want := time.Date(2026, 6, 2, 2, 0, 0, 0, time.UTC)
	if got := schedule.Next(s, now); !got.Equal(want) {
		t.Errorf("next firing of 0 2 * * * from %v = %v, want %v (02:00 UTC)", now, got.UTC(), want)
	}
	if raw := s.Next(now); raw.Equal(want) {
		t.Errorf("robfig/cron now evaluates in UTC itself (%v); Next's conversion and its comment can go", raw)
	}
}

// What robfig/cron does with a daily time in America/New_York on the two
// DST days of 2026, as the package comment and the README say.
func TestNextDSTBehaviour(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	firings := func(expr string, from time.Time, n int) []time.Time {
		s, err := policy.ParseSchedule(expr)
		if err != nil {
			t.Fatal(err)
		}
		var out []time.Time
		for at := from; len(out) < n; {
			at = schedule.Next(s, at)
			out = append(out, at)
		}
		return out
	}
	// Spring forward, Sunday 8 March 2026: 02:00 EST jumps to 03:00 EDT.
	// 02:30 does not exist that day and robfig/cron skips the day: 48h
	// between two passes.
	got := firings("CRON_TZ=America/New_York 30 2 * * *", time.Date(2026, 3, 7, 12, 0, 0, 0, ny), 2)
	want := []time.Time{time.Date(2026, 3, 9, 2, 30, 0, 0, ny), time.Date(2026, 3, 10, 2, 30, 0, 0, ny)}
	if !got[0].Equal(want[0]) || !got[1].Equal(want[1]) {
		t.Errorf("02:30 New York around spring forward: %v, want %v (8 March skipped)", got, want)
	}
	// 02:30 EST on the 7th to 02:30 EDT on the 9th: 47 hours.
	gap, err := policy.MaxGap("CRON_TZ=America/New_York 30 2 * * *", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || gap != 47*time.Hour {
		t.Errorf("MaxGap = %v, %v; want 47h (the skipped day)", gap, err)
	}
	// Fall back, Sunday 1 November 2026: 01:00-02:00 happens twice, and so
	// does a pass at 01:30 (harmless: the second mints nothing).
	got = firings("CRON_TZ=America/New_York 30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), 2)
	if d := got[1].Sub(got[0]); d != time.Hour {
		t.Errorf("01:30 New York on fall-back day: %v, want two firings an hour apart", got)
	}
	// In UTC nothing moves: every gap is 24h.
	if gap, err := policy.MaxGap("0 2 * * *", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil || gap != 24*time.Hour {
		t.Errorf("MaxGap(0 2 * * *) = %v, %v; want 24h", gap, err)
	}
}
