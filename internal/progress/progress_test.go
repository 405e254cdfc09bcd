package progress_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/progress"
)

// Without a terminal, progress is one log line per tick with the counts
// the hooks reported.
func TestProgressLogLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	start := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { return now }
	tick := make(chan time.Time)
	p := progress.NewLog(zerolog.New(&buf).With().Str("run_id", "r1").Logger(), tick, nil, clock)
	p.OnClaim(100)
	p.OnRecorded(40)
	for range 30 {
		p.OnOutcome(ledger.Sent)
	}
	p.OnOutcome(ledger.Retry)
	now = start.Add(8 * time.Second)
	tick <- now // received: the line is written before the loop looks again
	p.Stop(true)
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil {
		t.Fatalf("want exactly one JSON line, got %q: %v", buf.String(), err)
	}
	want := map[string]any{"message": "pass progress", "level": "info", "run_id": "r1", "claimed": 100.0, "recorded": 40.0, "sent": 30.0, "per_second": 5.0, "elapsed": 8000.0}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, line[k], v, buf.String())
		}
	}
}

// On a terminal, the bar shows the count against the total, and a rate.
func TestProgressBar(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := progress.NewBar(&buf, 50, time.Now)
	p.OnClaim(60) // more than the estimate: the bar grows
	p.OnRecorded(60)
	p.Stop(true)
	out := buf.String()
	if !strings.Contains(out, "60/60") || !strings.Contains(out, "notices/s") {
		t.Errorf("bar output %q: want 60/60 and a notices/s rate", out)
	}
}
