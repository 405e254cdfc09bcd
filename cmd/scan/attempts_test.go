package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"scan/internal/ledger"
	"scan/internal/metrics/metricstest"
	"scan/internal/smtptest"
)

// attemptEvents writes the payloads of
// internal/reconcile/testdata/providers/attempts/NAME.txt, with this
// fixture's keys and Message-IDs, to a file and returns its path.
func (f *fixture) attemptEvents(name string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "reconcile", "testdata", "providers", "attempts", name+".txt"))
	if err != nil {
		f.t.Fatal(err)
	}
	text := fixturePlaceholder.ReplaceAllStringFunc(string(b), func(m string) string {
		sub := fixturePlaceholder.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		if sub[1] == "key" {
			return f.key(subID(n), 0, testSecret)
		}
		return f.msgID(subID(n))
	})
	path := filepath.Join(f.t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return path
}

// reconcileFile runs `scan reconcile` of path in format and returns its
// summary.
func (f *fixture) reconcileFile(format, path string) map[string]any {
	f.t.Helper()
	code, out, errOut := f.runIn(nil, "reconcile", "--events", path, "--format", format)
	if code != 0 {
		f.t.Fatalf("reconcile %s: exit %d\n%s", filepath.Base(path), code, errOut)
	}
	lines := jsonLines[map[string]any](f.t, out)
	return lines[len(lines)-1]
}

// withProvider makes the fixture's messages carry provider's correlation
// headers.
func (f *fixture) withProvider(provider string) {
	f.t.Helper()
	if provider == "jsonl" {
		return // our own JSON lines: matched by Message-ID
	}
	f.setPolicy(strings.Replace(testPolicy, "concurrency: 8", "concurrency: 8\nprovider: "+provider+"\nses: {configuration_set: notices}", 1))
}

// Issue 19, "How to show it", per provider: attempt 1 is settled retry
// (by its provider event; Postmark, which has no "not sent" event here,
// by a hard bounce and the operator's --retry); attempt 2 lands in
// quarantine; attempt 1's events replayed later (naming attempt 1, or
// naming none and dated before attempt 2's claim) leave attempt 2 claimed
// and count stale, and the next pass sends nothing; a fresh event of
// attempt 2 settles it. Without attempts, the replay settled attempt 2
// retry and the next pass sent a third time.
func TestAnOlderAttemptsEventsNeverSettleTheNext(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"jsonl", "ses", "sendgrid", "mailgun", "postmark"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1, "", smtptest.WithMode(smtptest.CloseAfterData))
			f.withProvider(provider)
			id := subID(1)
			if s, _ := f.passIn(nil); s.Ambiguous != 1 {
				t.Fatalf("first pass = %+v, want 1 ambiguous", s)
			}
			first := f.attemptEvents(provider + "-1")
			if sum := f.reconcileFile(provider, first); sum["settled"] != 1.0 {
				t.Fatalf("attempt 1's events: %v", sum)
			}
			if provider == "postmark" {
				if code, _, errOut := f.runIn(nil, "resolve", f.key(id, 0, testSecret), "--retry", "--reason", "address fixed"); code != 0 {
					t.Fatalf("resolve --retry: exit %d\n%s", code, errOut)
				}
				// The hard bounce put the address on the suppression list
				// (issue 30): the operator lifts it with the decision.
				if code, _, errOut := f.runIn(nil, "suppress", "remove", "--email", "user1@example.net", "--reason", "address fixed"); code != 0 {
					t.Fatalf("suppress remove: exit %d\n%s", code, errOut)
				}
			}
			if st := f.rows()[id].State; st != ledger.Retry {
				t.Fatalf("attempt 1 settled %s, want retry", st)
			}
			if s, _ := f.passIn(nil); s.Retried != 1 || s.Ambiguous != 1 {
				t.Fatalf("second pass = %+v, want the retry re-claimed and ambiguous", s)
			}
			if n := f.smtp.Total(); n != 2 {
				t.Fatalf("%d messages, want 2", n)
			}

			// The hourly reconcile reads attempt 1's events again.
			sum := f.reconcileFile(provider, first)
			if sum["settled"] != 0.0 || sum["stale"].(float64) < 1 {
				t.Fatalf("replay of attempt 1: %v, want nothing settled and stale counted", sum)
			}
			if st := f.rows()[id].State; st != ledger.Claimed {
				t.Fatalf("attempt 2 is %s after attempt 1's replay, want claimed", st)
			}
			if s, _ := f.passIn(nil); s.Retried != 0 || s.Minted != 0 || f.smtp.Total() != 2 {
				t.Fatalf("pass after the replay = %+v, %d messages: sent again", s, f.smtp.Total())
			}

			// A fresh event of attempt 2 settles it.
			if sum := f.reconcileFile(provider, f.attemptEvents(provider+"-2")); sum["settled"] != 1.0 {
				t.Fatalf("attempt 2's event: %v", sum)
			}
			if st := f.rows()[id].State; st != ledger.Sent {
				t.Fatalf("attempt 2 is %s, want sent", st)
			}
			code, out, _ := f.runIn(nil, "lookup", id)
			rows := jsonLines[ledger.History](t, out)
			if code != 0 || len(rows) != 1 || rows[0].Attempts != 2 || len(rows[0].MessageSHA256) != 64 {
				t.Fatalf("lookup: exit %d\n%s", code, out)
			}
			var got []string
			for _, e := range rows[0].Evidence {
				got = append(got, strconv.Itoa(e.Attempt)+":"+string(e.Kind))
			}
			if want := map[string]string{"postmark": "1:bounce_hard 2:delivered", "sendgrid": "1:dropped 2:delivered"}[provider]; want == "" && strings.Join(got, " ") != "1:not_sent 2:delivered" ||
				want != "" && strings.Join(got, " ") != want {
				t.Fatalf("evidence %v", got)
			}
		})
	}
}

// "Not sent" outranks an acceptance of the same attempt, whether both are
// in one file or the acceptance came an hour before in another: the row
// is not sent (retry, or failed for a suppression that would drop a resend
// again), and no pass treats it as sent. Notice 1 reads both in one
// file; notice 2 in two.
func TestNotSentAfterAcceptanceIsNotSent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		provider, accepted, notSent string
		want                        ledger.State
	}{
		{"ses", "ses-accepted", "ses-rejected", ledger.Retry},
		{"sendgrid", "sendgrid-accepted", "sendgrid-dropped", ledger.Retry},
		{"sendgrid", "sendgrid-accepted", "sendgrid-suppressed", ledger.Failed},
		{"mailgun", "mailgun-accepted", "mailgun-suppressed", ledger.Failed},
	} {
		t.Run(tc.notSent, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 2, "", smtptest.WithMode(smtptest.CloseAfterData))
			f.withProvider(tc.provider)
			if s, _ := f.passIn(nil); s.Ambiguous != 2 {
				t.Fatalf("pass = %+v, want 2 ambiguous", s)
			}
			acc, drop := f.attemptEvents(tc.accepted), f.attemptEvents(tc.notSent)
			accB, _ := os.ReadFile(acc)
			dropB, _ := os.ReadFile(drop)
			lines := func(b []byte, i int) string { return strings.SplitAfter(string(b), "\n")[i] }
			one := filepath.Join(t.TempDir(), "one")
			if tc.provider == "sendgrid" { // one JSON array per file: notice 1's two events in one array
				a := strings.TrimSuffix(strings.TrimSpace(lines(accB, 0)), ",")
				d := strings.TrimSuffix(strings.TrimSpace(lines(dropB, 0)), ",")
				a, d = strings.TrimPrefix(a, "["), strings.TrimPrefix(d, "[")
				if err := os.WriteFile(one, []byte("["+a+",\n"+d+"]\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(one, []byte(lines(accB, 0)+lines(dropB, 0)), 0o644); err != nil {
				t.Fatal(err)
			}
			// Notice 2: the acceptance alone first.
			accOnly2 := filepath.Join(t.TempDir(), "acc2")
			if err := os.WriteFile(accOnly2, accB, 0o644); err != nil {
				t.Fatal(err)
			}
			if sum := f.reconcileFile(tc.provider, accOnly2); sum["settled"] != 2.0 {
				t.Fatalf("acceptances: %v", sum)
			}
			if st := f.rows()[subID(2)].State; st != ledger.Sent {
				t.Fatalf("accepted: %s", st)
			}
			// Then "not sent" of both: notice 1's overrules its
			// acceptance, notice 2's overrules the earlier run's.
			f.reconcileFile(tc.provider, one)
			if sum := f.reconcileFile(tc.provider, drop); sum["overruled"].(float64) < 1 {
				t.Fatalf("not sent: %v", sum)
			}
			for _, id := range []string{subID(1), subID(2)} {
				if st := f.rows()[id].State; st != tc.want {
					t.Errorf("%s: %s, want %s", id, st, tc.want)
				}
			}
		})
	}
}

// A sent notice's delivery and bounce are kept as evidence and shown by
// lookup; nothing is sent again (the hard bounce makes it failed, never
// retry). The digest lookup prints is the SHA-256 of the message the
// server received.
func TestEvidenceOfASentNotice(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, "")
	f.withProvider("ses")
	if s, _ := f.passIn(nil); s.Sent != 1 {
		t.Fatalf("pass = %+v", s)
	}
	sum := f.reconcileFile("ses", f.attemptEvents("ses-after-sent"))
	if ev := sum["events"].(map[string]any); ev["delivered"] != 1.0 || ev["bounce_hard"] != 1.0 {
		t.Fatalf("summary %v", sum)
	}
	if s, _ := f.passIn(nil); s.Retried+s.Minted != 0 || f.smtp.Total() != 1 {
		t.Fatalf("pass after the bounce = %+v: sent again", s)
	}
	code, out, _ := f.runIn(nil, "lookup", subID(1))
	rows := jsonLines[ledger.History](t, out)
	if code != 0 || len(rows) != 1 || rows[0].State != ledger.Failed || len(rows[0].Evidence) != 2 ||
		rows[0].Evidence[0].Kind != ledger.KindDelivered || rows[0].Evidence[1].Kind != ledger.KindBounceHard ||
		rows[0].Evidence[0].At == nil {
		t.Fatalf("lookup: exit %d\n%s", code, out)
	}
	if want := sha256Hex(f.smtp.Messages()[0].Raw); rows[0].MessageSHA256 != want {
		t.Fatalf("digest %s, want %s (the message the server read)", rows[0].MessageSHA256, want)
	}
	// The replay keeps nothing new, and says so to the Pushgateway.
	gw := metricstest.New(t)
	code, out, errOut := f.runIn([]string{"PUSHGATEWAY_URL=" + gw.URL}, "reconcile", "--format", "ses", "--events", f.attemptEvents("ses-after-sent"))
	if lines := jsonLines[map[string]any](t, out); code != 0 || lines[len(lines)-1]["duplicate"] != 2.0 {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errOut)
	}
	fam := gw.Group("job=scan_reconcile,provider=ses")["scan_reconcile_events_total"]
	for _, ev := range []string{"delivered", "bounce_hard"} {
		if v, ok := metricstest.Value(fam, map[string]string{"event": ev, "result": "duplicate"}); !ok || v != 1 {
			t.Errorf("scan_reconcile_events_total{provider=ses,event=%s,result=duplicate} = %v (present %v), want 1", ev, v, ok)
		}
	}
}

// The evidence keeps what the provider said (the receiving server's
// response, the bounce's status and diagnostic), but an address or a name
// the receiving server quoted never reaches the ledger, nor either form
// of lookup: only the address's domain does. The payloads are SES's
// documented Delivery and Bounce, with the recipient quoted as receiving
// servers do.
func TestEvidenceDetailKeepsNoAddress(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, "")
	f.withProvider("ses")
	if s, _ := f.passIn(nil); s.Sent != 1 {
		t.Fatalf("pass = %+v", s)
	}
	var email, name string
	if err := f.db.QueryRow(`SELECT email, name FROM subscriptions WHERE id = $1`, subID(1)).Scan(&email, &name); err != nil {
		t.Fatal(err)
	}
	local, domain, _ := strings.Cut(email, "@")
	path := f.attemptEvents("ses-after-sent")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	quoted := strings.NewReplacer(
		"550 5.1.1 user unknown", `550 5.1.1 \"`+name+`\" <`+email+`>: Recipient address rejected:\r\nUser unknown`,
		"250 2.6.0 Message received", "250 2.6.0 Message received for <"+email+">",
	).Replace(string(b))
	if quoted == string(b) || !strings.Contains(quoted, email+">: Recipient") {
		t.Fatal("the fixture no longer holds the documented response and diagnostic")
	}
	if err := os.WriteFile(path, []byte(quoted), 0o644); err != nil {
		t.Fatal(err)
	}
	if sum := f.reconcileFile("ses", path); sum["settled"] != 1.0 {
		t.Fatalf("summary %v", sum)
	}
	leaks := func(where, s string) {
		t.Helper()
		if strings.Contains(s, local) || strings.Contains(s, name) {
			t.Errorf("%s holds the recipient (%s or %q):\n%s", where, local, name, s)
		}
		if !strings.Contains(s, "[redacted]@"+domain) || !strings.Contains(s, "Recipient address rejected: User unknown") ||
			!strings.Contains(s, "250 2.6.0 Message received for") {
			t.Errorf("%s lacks the redacted detail:\n%s", where, s)
		}
	}
	var kept []string
	if err := f.db.Select(&kept, `SELECT detail FROM notice_evidence ORDER BY occurred_at`); err != nil {
		t.Fatal(err)
	}
	leaks("notice_evidence.detail", strings.Join(kept, "\n"))

	code, out, _ := f.runIn(nil, "lookup", subID(1), "--json")
	rows := jsonLines[ledger.History](t, out)
	if code != 0 || len(rows) != 1 || len(rows[0].Evidence) != 2 ||
		rows[0].Evidence[1].Detail != "bounce: Permanent/General; status: 5.1.1; diagnostic: smtp; 550 5.1.1 <[redacted]@"+domain+
			">: Recipient address rejected: User unknown; mta: dsn; mta.example.com" {
		t.Fatalf("lookup: exit %d\n%s", code, out)
	}
	leaks("lookup --json", out)

	// The terminal form (-o table) prints the same evidence.
	code, table, _ := f.runIn(nil, "lookup", subID(1), "-o", "table")
	if code != 0 || !strings.Contains(table, "Recipient address rejected") {
		t.Fatalf("lookup -o table: exit %d\n%s", code, table)
	}
	leaks("lookup on a terminal", table)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
