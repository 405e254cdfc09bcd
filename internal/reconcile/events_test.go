package reconcile_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"scan/internal/ledger"
	"scan/internal/reconcile"
)

func TestSettles(t *testing.T) {
	t.Parallel()
	for ev, want := range map[string]ledger.State{
		"accepted": ledger.Sent, "delivered": ledger.Sent, "deferred": ledger.Sent, "bounced": ledger.Sent,
		"complained": ledger.Sent, "opened": ledger.Sent, " Delivered ": ledger.Sent, "BOUNCE": ledger.Sent,
		"rejected": ledger.Retry, "dropped": ledger.Retry, "Dropped": ledger.Retry,
		"unsubscribed": "", "": "", "queued": "", "failed": "",
	} {
		if got := reconcile.Settles(ev); got != want {
			t.Errorf("Settles(%q) = %q, want %q", ev, got, want)
		}
	}
}

func read(t *testing.T, in string) ([]ledger.Settlement, reconcile.Stats) {
	t.Helper()
	var got []ledger.Settlement
	st, err := reconcile.Read(strings.NewReader(in), func(s ledger.Settlement) error {
		got = append(got, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, st
}

// Bad lines are counted with their line numbers and never stop the read.
func TestReadCountsAndSkips(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"message_id":"<a@x>","event":"Delivered","timestamp":"2026-11-30T02:00:01Z"}`, // 1
		`{"message_id":" b@x ","event":"rejected"}`,                                     // 2
		``, // 3: blank, not counted
		`{"message_id":"c@x","event":"clicked_link"}`, // 4: proves nothing
		`not json`,                                // 5
		`{"event":"delivered"}`,                   // 6: no message_id
		`{"message_id":"d@x"}`,                    // 7: no event
		`{"message_id":"<>","event":"delivered"}`, // 8: empty id
		`{"message_id":5,"event":"delivered"}`,    // 9: wrong type
		`["a@x","delivered"]`,                     // 10
		`{"message_id":"e@x","event":"opened","timestamp":1796000000}`,       // 11: Unix seconds
		`{"message_id":"f@x","event":"bounced","timestamp":1796000000123}`,   // 12: Unix milliseconds
		`{"message_id":"g@x","event":"deferred","timestamp":"last tuesday"}`, // 13: unreadable time, ignored
		`{"message_id":"h@x","event":"accepted","timestamp":null,"meta":{}}`, // 14
	}, "\r\n") // CRLF, and no newline at the end
	got, st := read(t, in)
	if st.Lines != 13 || st.Malformed != 6 || st.Irrelevant != 1 || st.Oversized != 0 {
		t.Fatalf("stats = %+v", st)
	}
	var lines []int
	for _, p := range st.Problems {
		lines = append(lines, p.Line)
	}
	if fmt.Sprint(lines) != "[5 6 7 8 9 10]" {
		t.Fatalf("problem lines = %v", lines)
	}
	want := []ledger.Settlement{
		{MessageID: "a@x", To: ledger.Sent, Event: "delivered", At: time.Date(2026, 11, 30, 2, 0, 1, 0, time.UTC)},
		{MessageID: "b@x", To: ledger.Retry, Event: "rejected"},
		{MessageID: "e@x", To: ledger.Sent, Event: "opened", At: time.Unix(1796000000, 0).UTC()},
		{MessageID: "f@x", To: ledger.Sent, Event: "bounced", At: time.UnixMilli(1796000000123).UTC()},
		{MessageID: "g@x", To: ledger.Sent, Event: "deferred"},
		{MessageID: "h@x", To: ledger.Sent, Event: "accepted"},
	}
	if len(got) != len(want) {
		t.Fatalf("settlements = %+v", got)
	}
	for i := range want {
		if got[i].MessageID != want[i].MessageID || got[i].To != want[i].To || got[i].Event != want[i].Event || !got[i].At.Equal(want[i].At) {
			t.Errorf("settlement %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A line over MaxLine is skipped whole, and the next line is read.
func TestReadOversizedLine(t *testing.T) {
	t.Parallel()
	in := `{"message_id":"a@x","event":"delivered","pad":"` + strings.Repeat("x", reconcile.MaxLine) + `"}` + "\n" +
		`{"message_id":"b@x","event":"delivered"}` + "\n"
	got, st := read(t, in)
	if st.Oversized != 1 || st.Lines != 2 || len(st.Problems) != 1 || st.Problems[0].Line != 1 {
		t.Fatalf("stats = %+v", st)
	}
	if len(got) != 1 || got[0].MessageID != "b@x" {
		t.Fatalf("settlements = %+v", got)
	}
}

// Problems are reported up to a bound; the counts stay exact.
func TestReadManyProblems(t *testing.T) {
	t.Parallel()
	_, st := read(t, strings.Repeat("nope\n", 1000))
	if st.Malformed != 1000 || len(st.Problems) == 0 || len(st.Problems) >= 1000 {
		t.Fatalf("malformed %d, problems %d", st.Malformed, len(st.Problems))
	}
}

func TestReadStopsOnErrors(t *testing.T) {
	t.Parallel()
	stop := errors.New("stop")
	calls := 0
	_, err := reconcile.Read(strings.NewReader("{\"message_id\":\"a@x\",\"event\":\"delivered\"}\n{\"message_id\":\"b@x\",\"event\":\"delivered\"}\n"),
		func(ledger.Settlement) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("err = %v after %d calls", err, calls)
	}
	boom := errors.New("disk on fire")
	r := io.MultiReader(strings.NewReader("{\"message_id\":\"a@x\",\"event\":\"delivered\"}\n"), iotest.ErrReader(boom))
	_, err = reconcile.Read(r, func(ledger.Settlement) error { return nil })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v", err)
	}
}
