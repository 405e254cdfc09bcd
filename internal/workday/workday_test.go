package workday

import (
	"testing"
	"time"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestBackAcrossHolidays(t *testing.T) {
	de, err := New("DE", nil)
	if err != nil {
		t.Fatal(err)
	}
	us, err := New("US", nil)
	if err != nil {
		t.Fatal(err)
	}
	by, err := New("DE-BY", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    *Calendar
		d    Date
		n    int
		want Date
	}{
		// Christmas: 25 and 26 December are holidays; the 24th is not.
		{"DE three before 28 Dec", de, NewDate(2026, 12, 28), 3, NewDate(2026, 12, 22)},
		// Easter 2027: Good Friday 26 March, Easter Monday 29 March.
		{"DE three before Easter Tuesday", de, NewDate(2027, 3, 30), 3, NewDate(2027, 3, 23)},
		// Thanksgiving 2027 is Thursday 25 November.
		{"US two before Monday after Thanksgiving", us, NewDate(2027, 11, 29), 2, NewDate(2027, 11, 24)},
		// Epiphany is a holiday in Bavaria, not in Germany as a whole.
		{"DE one before 7 Jan", de, NewDate(2027, 1, 7), 1, NewDate(2027, 1, 6)},
		{"DE-BY one before 7 Jan", by, NewDate(2027, 1, 7), 1, NewDate(2027, 1, 5)},
	} {
		if got := tc.c.Back(tc.d, tc.n); got != tc.want {
			t.Errorf("%s: Back(%s, %d) = %s, want %s", tc.name, tc.d, tc.n, got, tc.want)
		}
	}
	if got := de.Forward(NewDate(2026, 12, 22), 3); got != NewDate(2026, 12, 28) {
		t.Errorf("Forward = %s, want 2026-12-28", got)
	}
}

func TestWeekendAndUnknown(t *testing.T) {
	if _, err := New("XX", nil); err == nil {
		t.Error("unknown code accepted")
	}
	if _, err := New("GB", nil); err == nil {
		t.Error("GB accepted: England and Wales and Scotland differ")
	}
	if !Known("GB-ENG") || !Known("DE-BY") || !Known("US") {
		t.Error("known codes missing")
	}
	fs, err := New("US", []time.Weekday{time.Friday, time.Saturday})
	if err != nil {
		t.Fatal(err)
	}
	if !fs.IsWorking(NewDate(2027, 3, 14)) || fs.IsWorking(NewDate(2027, 3, 12)) {
		t.Error("weekend friday+saturday: sunday must work, friday not")
	}
	if _, err := New("US", []time.Weekday{0, 1, 2, 3, 4, 5, 6}); err == nil {
		t.Error("a week without a working day accepted")
	}
	if d, err := ParseWeekday("Sat"); err != nil || d != time.Saturday {
		t.Errorf("ParseWeekday(Sat) = %v, %v", d, err)
	}
}

func TestWallTimeDST(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	berlin := mustLoad(t, "Europe/Berlin")
	for _, tc := range []struct {
		name   string
		d      Date
		hh, mm int
		loc    *time.Location
		want   time.Time
	}{
		// 14 March 2027: 02:00 EST jumps to 03:00 EDT; 02:30 is skipped:
		// due when the clocks skip it (07:00 UTC).
		{"gap", NewDate(2027, 3, 14), 2, 30, ny, time.Date(2027, 3, 14, 7, 0, 0, 0, time.UTC)},
		// 7 November 2027: 02:00 EDT falls back to 01:00 EST; 01:30 is
		// shown twice: the first (05:30 UTC).
		{"repeat", NewDate(2027, 11, 7), 1, 30, ny, time.Date(2027, 11, 7, 5, 30, 0, 0, time.UTC)},
		// 31 October 2027 in Berlin: 03:00 CEST back to 02:00 CET.
		{"repeat berlin", NewDate(2027, 10, 31), 2, 30, berlin, time.Date(2027, 10, 31, 0, 30, 0, 0, time.UTC)},
		{"plain", NewDate(2027, 3, 23), 9, 0, berlin, time.Date(2027, 3, 23, 8, 0, 0, 0, time.UTC)},
		{"plain summer", NewDate(2027, 3, 30), 9, 0, berlin, time.Date(2027, 3, 30, 7, 0, 0, 0, time.UTC)},
	} {
		if got := WallTime(tc.d, tc.hh, tc.mm, tc.loc); !got.Equal(tc.want) {
			t.Errorf("%s: WallTime = %s, want %s", tc.name, got.UTC(), tc.want)
		}
	}
}
