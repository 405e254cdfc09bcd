package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// seedOld puts n notices of the billing period that starts on day into
// the ledger, the first claimed of them still claimed and the rest sent.
func (f *fixture) seedOld(day time.Time, n, claimed int) []string {
	f.t.Helper()
	ctx := context.Background()
	run := "old-" + day.Format("20060102")
	cs := make([]ledger.Claim, n)
	keys := make([]string, n)
	for i := range cs {
		keys[i] = fmt.Sprintf("%016x%048x", day.Unix(), i)
		cs[i] = ledger.Claim{Key: keys[i], Tuple: notice.Tuple{SubscriptionID: fmt.Sprintf("old_%d", i), Kind: testKind, PeriodStart: day},
			RenewsAt: day, WindowClosesAt: day, Domain: "example.com", MessageID: keys[i][:32] + "@" + testMsgIDDom}
	}
	opt := ledger.ClaimOptions{State: ledger.Claimed, Now: day, RunID: run}
	if won, err := ledger.Insert(ctx, f.db, opt, cs); err != nil || len(won) != n {
		f.t.Fatalf("seed %s: won %d, %v", day.Format("2006-01"), len(won), err)
	}
	var outs []ledger.Outcome
	for _, c := range cs[claimed:] {
		outs = append(outs, ledger.Outcome{Key: c.Key, PeriodStart: day, State: ledger.Sent, SentAt: day, Attempts: 1})
	}
	if _, err := ledger.RecordOutcomes(ctx, f.db, run, day, outs); err != nil {
		f.t.Fatal(err)
	}
	return keys
}

func (f *fixture) partitions() []string {
	f.t.Helper()
	ps, err := ledger.Partitions(context.Background(), f.db)
	if err != nil {
		f.t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, strings.TrimPrefix(p.Name, "notice_ledger_p"))
	}
	return names
}

// monthsAgo is the first day of the month m months before now's.
func monthsAgo(now time.Time, m int) time.Time {
	return time.Date(now.Year(), now.Month()-time.Month(m), 1, 0, 0, 0, 0, time.UTC)
}

func TestPruneRefusesEachUnsafeHorizon(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	now := time.Now().UTC()
	f.seedOld(monthsAgo(now, 3), 5, 0)
	f.seedOld(monthsAgo(now, 20), 5, 0)
	before := f.partitions()
	// The test policy's longest lead is 72h: the shortest horizon is 3d
	// plus a month's margin, 34d. A policy whose California window opens
	// 45 days ahead needs 76d.
	wide := filepath.Join(t.TempDir(), "wide.yaml")
	if err := os.WriteFile(wide, []byte(strings.Replace(testPolicy, "    close_before: 24h\n", "    close_before: 24h\n    by_jurisdiction:\n      US-CA: {open_before: 45d, close_before: 16d}\n", 1)+"legal:\n  US-CA: {min_lead: 15d, max_lead: 45d}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(t.TempDir(), "short.yaml")
	if err := os.WriteFile(short, []byte(testPolicy+"retention: 20d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		env   []string
		args  []string
		field string
	}{
		{"a day short of lead plus margin", nil, []string{"--older-than", "33d"}, "--older-than"},
		{"zero", nil, []string{"--older-than", "0s"}, "--older-than"},
		{"negative", nil, []string{"--older-than", "-400d"}, "--older-than"},
		{"not a duration", nil, []string{"--older-than", "a year"}, "--older-than"},
		{"the policy's own retention", []string{"SCAN_CONFIG=" + short}, nil, "retention"},
		{"a jurisdiction's longer window", []string{"SCAN_CONFIG=" + wide}, []string{"--older-than", "75d"}, "--older-than"},
	} {
		code, out, errOut := f.runIn(c.env, append([]string{"prune"}, c.args...)...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "scan: "+c.field+": ") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", c.name, code, out, errOut)
		}
	}
	if got := f.partitions(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("a refused prune removed partitions: %v, had %v", got, before)
	}
	// The shortest accepted horizon, dry and then for real.
	for _, dry := range []bool{true, false} {
		args := []string{"prune", "--older-than", "34d"}
		if dry {
			args = append(args, "--dry-run")
		}
		code, out, errOut := f.runIn(nil, args...)
		var got struct {
			DryRun  bool               `json:"dry_run"`
			Removed []ledger.Partition `json:"removed"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.DryRun != dry || len(got.Removed) != 2 {
			t.Fatalf("prune (dry %v): exit %d, %q, %s", dry, code, out, errOut)
		}
	}
	if got := f.partitions(); len(got) != len(before)-2 {
		t.Fatalf("after prune: %v, had %v", got, before)
	}
}

func TestPruneRefusesPeriodsWithClaimsAndNamesThem(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	now := time.Now().UTC()
	f.seedOld(monthsAgo(now, 16), 5, 0)
	stuck := f.seedOld(monthsAgo(now, 15), 5, 2)
	before := f.partitions()
	code, out, errOut := f.runIn(nil, "prune", "--older-than", "60d")
	if code != 2 || out != "" || !strings.Contains(errOut, monthsAgo(now, 15).Format("2006-01")+": 2 ("+stuck[0][:12]+", "+stuck[1][:12]+")") ||
		!strings.Contains(errOut, "nothing was removed") || strings.Contains(errOut, stuck[0][:13]) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := f.partitions(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("a refused prune removed partitions: %v, had %v", got, before)
	}
	// Once an operator settles them, the months go.
	for _, k := range stuck[:2] {
		if code, _, errOut := f.runIn(nil, "resolve", k, "--sent", "--reason", "seen in the provider's console"); code != 0 {
			t.Fatalf("resolve: exit %d: %s", code, errOut)
		}
	}
	if code, out, errOut := f.runIn(nil, "prune", "--older-than", "60d"); code != 0 || !strings.Contains(out, `"resolutions_removed":2`) {
		t.Fatalf("prune after resolve: exit %d, %q, %s", code, out, errOut)
	}
}

// A pass runs (in its own process) while prune removes the old months one
// at a time: every due notice is sent exactly once, and recorded.
func TestPruneDuringAPassLosesAndDuplicatesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 300, "")
	now := time.Now().UTC()
	for m := 14; m <= 19; m++ {
		f.seedOld(monthsAgo(now, m), 20, 0)
	}
	pass := f.start(f.env(), "run", "--batch-size", "20")
	for m := 19; m >= 14; m-- {
		// Each prune takes the month m months back.
		horizon := now.Sub(monthsAgo(now, m-1))
		if code, out, errOut := f.runIn(nil, "prune", "--older-than", fmt.Sprintf("%dh", int(horizon.Hours()))); code != 0 {
			t.Fatalf("prune during the pass: exit %d, %q, %s", code, out, errOut)
		}
	}
	r := pass.wait()
	if r.code != 0 {
		t.Fatalf("pass: exit %d\n%s", r.code, tail(r.stderr))
	}
	if s := r.summary(t); s.Sent != 300 || s.Minted != 300 {
		t.Fatalf("pass: %+v", s)
	}
	if got := f.partitions(); len(got) != 1 {
		t.Fatalf("partitions after prune: %v", got)
	}
	if tl := f.check(true); tl.sent != 300 || tl.received != 300 {
		t.Fatalf("after the pass and prune: %+v", tl)
	}
	// A second pass finds everything already handled.
	if s := f.mustRun(f.env()); s.Minted != 0 || s.Suppressed != 300 {
		t.Fatalf("re-run: %+v", s)
	}
}
