package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scan/internal/notice"
)

// A shadow cycle beside a legacy sender (issue 27): daily shadow passes
// claim nothing and send nothing, and record each notice they would have
// claimed once. The report counts the legacy sender's sends, the notice
// it sent twice, the sends outside any window (one late, one to a
// subscription that was never active) and the notice it missed. After
// `scan backfill` of the legacy file (with its repeated line), the first
// enforced pass sends only what the legacy sender missed. `scan prune`
// then removes the shadow rows with their months.
func TestShadowCycleBesideALegacySender(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	type row struct {
		id, status string
		renews     time.Time
	}
	rows := []row{
		{"a_once", "active", t0.Add(5 * day)},         // window [2d, 4d)
		{"b_twice", "active", t0.Add(5 * day)},        // sent twice
		{"c_late", "active", t0.Add(6 * day)},         // window [3d, 5d), sent at 5d+1h
		{"d_cancelled", "cancelled", t0.Add(5 * day)}, // never active, sent anyway
		{"e_last", "active", t0.Add(9 * day)},         // window [6d, 8d), sent at 6d+1h
		{"m_missed", "active", t0.Add(9 * day)},       // never sent by the legacy sender
	}
	for _, r := range rows {
		if _, err := f.db.Exec(`INSERT INTO subscriptions (id, email, status, renews_at, period_start)
			VALUES ($1, $1 || '@example.com', $2, $3, $4)`, r.id, r.status, r.renews, r.renews.Format(time.DateOnly)); err != nil {
			t.Fatal(err)
		}
	}
	ts := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
	period := func(id string) string {
		for _, r := range rows {
			if r.id == id {
				return r.renews.Format(time.DateOnly)
			}
		}
		t.Fatalf("no row %s", id)
		return ""
	}
	line := func(id string, at time.Duration) string {
		return id + "," + period(id) + "," + testKind + ",0," + ts(at) + "\n"
	}
	legacy := filepath.Join(t.TempDir(), "legacy.csv")
	csv := "subscription_id,period_start,kind,revision,sent_at\n" +
		line("a_once", 2*day+3*time.Hour) +
		line("b_twice", 2*day+3*time.Hour) + line("b_twice", 3*day+3*time.Hour) +
		line("c_late", 5*day+time.Hour) +
		line("d_cancelled", 2*day+5*time.Hour) +
		line("e_last", 6*day+time.Hour)
	if err := os.WriteFile(legacy, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}

	recorded := 0
	for k := 0; k <= 6; k++ {
		for range 2 { // a repeated pass records nothing new
			code, out, errOut := f.runIn(nil, "run", "--shadow", "--now", ts(time.Duration(k)*day+2*time.Hour))
			var s struct {
				Shadow   bool `json:"shadow"`
				Recorded int  `json:"recorded"`
			}
			if code != 0 || json.Unmarshal([]byte(out), &s) != nil || !s.Shadow {
				t.Fatalf("shadow pass: exit %d %q\n%s", code, out, tail(errOut))
			}
			recorded += s.Recorded
		}
	}
	if recorded != 5 || f.smtp.Total() != 0 || f.ledgerCount() != 0 {
		t.Fatalf("shadow cycle: recorded %d (want 5), %d messages, %d ledger rows (want none)", recorded, f.smtp.Total(), f.ledgerCount())
	}

	code, out, errOut := f.runIn(nil, "shadow", "report", "--legacy", legacy)
	var rep map[string]int
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("shadow report: exit %d %q\n%s", code, out, errOut)
	}
	want := map[string]int{"legacy_sends": 6, "legacy_notices": 5, "duplicates": 1, "outside_window": 2, "missed_by_legacy": 1, "would_send": 5}
	for k, v := range want {
		if rep[k] != v {
			t.Errorf("report %s = %d, want %d (%s)", k, rep[k], v, strings.TrimSpace(out))
		}
	}

	if code, out, errOut := f.runIn(nil, "backfill", "--from", legacy); code != 0 || !strings.Contains(out, `"inserted":5`) {
		t.Fatalf("backfill: exit %d %q\n%s", code, out, errOut)
	}
	s, _ := f.passIn(nil, "--now", ts(6*day+3*time.Hour))
	if s.Sent != 1 || f.smtp.Total() != 1 || f.smtp.Count(f.msgIDOf("m_missed", period("m_missed"))) != 1 {
		t.Fatalf("first enforced pass = %+v, %d messages: want only m_missed", s, f.smtp.Total())
	}

	code, out, errOut = f.runIn(nil, "prune", "--older-than", "60d")
	var pr struct {
		Shadow int `json:"shadow_removed"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &pr) != nil || pr.Shadow != 5 {
		t.Fatalf("prune: exit %d %q\n%s", code, out, errOut)
	}

	if code, _, _ := f.runIn(nil, "run", "--shadow", "--dry-run"); code != 2 {
		t.Errorf("--shadow with --dry-run: exit %d, want 2", code)
	}
	if code, _, _ := f.runIn(nil, "shadow", "report"); code != 2 {
		t.Errorf("shadow report without --legacy: exit %d, want 2", code)
	}
}

// msgIDOf is the Message-ID (without brackets) of the notice of id in
// the period starting on period (YYYY-MM-DD).
func (f *fixture) msgIDOf(id, period string) string {
	k, err := notice.NewKeyer([]byte(testSecret))
	if err != nil {
		f.t.Fatal(err)
	}
	ps, _ := time.Parse(notice.DateLayout, period)
	return notice.MessageID(k.Key(notice.Tuple{SubscriptionID: id, PeriodStart: ps, Kind: testKind}), testMsgIDDom)
}

// A due: rule that cannot be met is a usage error naming the kind, and
// nothing is written (issue 27).
func TestDuePolicyErrorsExitTwo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, "")
	for name, kind := range map[string]string{
		"unknown calendar": `    due: {working_days_before: 3, at: "09:00", calendar: XX}
    close_before: 24h`,
		"both": `    open_before: 72h
    due: {working_days_before: 3, at: "09:00", calendar: DE}
    close_before: 24h`,
		"holiday stretch": `    due: {working_days_before: 3, at: "09:00", calendar: DE}
    close_before: 24h
    legal:
      DE: {min_lead: 1d, max_lead: 6d}`,
	} {
		f.setPolicy("schedule: \"0 2 * * *\"\nnotices:\n  - kind: pre_debit\n" + kind + "\n")
		code, _, errOut := f.runIn(nil, "run")
		if code != 2 || !strings.Contains(errOut, "pre_debit") {
			t.Errorf("%s: exit %d, want 2 naming the kind\n%s", name, code, tail(errOut))
		}
	}
	if n := f.ledgerCount(); n != 0 {
		t.Fatalf("%d ledger rows written", n)
	}
}
