package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scan/internal/ask"
	"scan/internal/ledger"
	"scan/internal/reconcile"
)

// fakeAsk is a provider whose API lists what FAKE_ASK_RECORD (a jsonl
// file of the test's) holds: the seam `scan recover --ask` asks through,
// exercised without a provider's API. The real providers plug in the same
// way (newAskProvider).
type fakeAsk struct{ path string }

func (fakeAsk) Name() string { return "fake" }

func (fakeAsk) About(context.Context, ask.Claim, time.Time) (ask.Answer, error) {
	return ask.Answer{}, ask.ErrUnsupported
}

func (p fakeAsk) Since(_ context.Context, since time.Time, fn func(ledger.Settlement) error) error {
	f, err := os.Open(p.path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = reconcile.ReadClassified(f, "jsonl", func(s ledger.Settlement) error {
		if s.At.Before(since) {
			return nil
		}
		return fn(s)
	})
	return err
}

func init() {
	testAskProviders["fake"] = func(e *env) (ask.Provider, error) {
		return fakeAsk{path: e.getenv("FAKE_ASK_RECORD")}, nil
	}
}

// scan recover --ask: a pass refused after the ledger's database went back
// in time (its last pass recorded on another timeline, as a promotion
// leaves it) is lifted by the provider's own record of what it accepted
// since T: the notices the ledger lacks are recorded, and the next pass
// records them sent from that evidence instead of sending them.
func TestRecoverAskListsWhatTheProviderAcceptedSince(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10, "")
	f.passIn(nil)
	f.add(5)
	since := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	var b strings.Builder
	for i := 1; i <= 15; i++ {
		line, _ := json.Marshal(map[string]any{"message_id": f.msgID(subID(i)), "event": "delivered",
			"timestamp": since.Add(time.Duration(i) * time.Second)})
		b.Write(line)
		b.WriteByte('\n')
	}
	// An event before --since: not the record's business.
	old, _ := json.Marshal(map[string]any{"message_id": "0123456789abcdef0123456789abcdef@n.example.com", "event": "delivered",
		"timestamp": since.Add(-time.Hour)})
	b.Write(old)
	record := filepath.Join(t.TempDir(), "record.jsonl")
	if err := os.WriteFile(record, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f.db.MustExec(`UPDATE notice_ledger_epoch SET timeline = timeline + 1`)
	code, _, errOut := f.runIn(nil, "run", "--batch-size", "20")
	if code != exitRestored || !strings.Contains(errOut, "scan recover") || f.smtp.Total() != 10 {
		t.Fatalf("after the timeline changed: exit %d, %d sent\n%s", code, f.smtp.Total(), tail(errOut))
	}
	for _, bad := range [][]string{
		{"recover", "--since", since.Format(time.RFC3339), "--ask", "nope"},
		{"recover", "--since", since.Format(time.RFC3339), "--ask", "fake", "--events", record},
		{"recover", "--ask", "fake"},
		{"recover", "--since", "yesterday", "--ask", "fake"},
	} {
		if code, _, errOut := f.runIn(nil, bad...); code != exitUsage {
			t.Fatalf("%v: exit %d, want 2\n%s", bad, code, errOut)
		}
	}
	code, out, errOut := f.runIn([]string{"FAKE_ASK_RECORD=" + record}, "recover", "--since", since.Format(time.RFC3339), "--ask", "fake", "--by", "ops")
	var rep reconcile.RecoverReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("recover --ask: exit %d %q\n%s", code, out, errOut)
	}
	if rep.Events != 15 || rep.Recorded != 5 || rep.AlreadyKnown != 10 || rep.Epoch == nil || rep.Epoch.Kind != ledger.EpochRecover {
		t.Fatalf("recover --ask: %+v", rep)
	}
	s, _ := f.passIn(nil)
	if s.Witnessed != 5 || s.Minted != 0 || f.smtp.Total() != 10 {
		t.Fatalf("after recover: %+v, %d sent", s, f.smtp.Total())
	}
	for id, n := range f.received() {
		if n != 1 {
			t.Fatalf("%s received %d times", id, n)
		}
	}
}
