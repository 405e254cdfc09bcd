package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/smtptest"
)

var fixturePlaceholder = regexp.MustCompile(`\{\{(key|msgid):(\d+)\}\}`)

// providerEvents returns a provider's fixture payloads
// (internal/provider/<name>/testdata/events.txt) with the keys and Message-IDs
// of this fixture's subscriptions.
func (f *fixture) providerEvents(provider string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "provider", provider, "testdata", "events.txt"))
	if err != nil {
		f.t.Fatal(err)
	}
	return fixturePlaceholder.ReplaceAllStringFunc(string(b), func(m string) string {
		sub := fixturePlaceholder.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		if sub[1] == "key" {
			return f.key(subID(n), 0, testSecret)
		}
		return f.msgID(subID(n))
	})
}

// For each provider: a pass whose SMTP server reads every message and
// then never answers is killed, leaving every claim in quarantine with its
// message delivered; `reconcile --format PROVIDER` of that provider's
// documented payloads settles them by the notice key the provider echoes
// (or the Message-ID when a payload has no key); the next pass sends again
// only what the provider said never left, and stores the provider's id
// from the reply.
func TestReconcileProviderEventsAfterAHang(t *testing.T) {
	t.Parallel()
	const (
		S = ledger.Sent
		F = ledger.Failed
		R = ledger.Retry
		C = ledger.Claimed
	)
	for _, tc := range []struct {
		provider string
		header   string // the correlation header every message carries
		reply    string // the provider's final reply; %s is a per-message id
		states   []ledger.State
		summary  map[string]float64
		wantID   string // provider_id prefix of a re-sent notice; "" when the reply names no id
	}{
		{"ses", "X-SES-MESSAGE-TAGS: notice_key=", "Ok 0100019%s-000000", []ledger.State{S, S, F, S, R, S, S, S, S, C},
			map[string]float64{"payloads": 18, "settled": 9, "already_settled": 2, "unknown_message_id": 1, "malformed": 3, "irrelevant": 3}, "0100019"},
		// sub 7: dropped as a "Bounced Address" (on SendGrid's bounce
		// list: a resend would be dropped again), so failed; the
		// delivered after it is kept as evidence only.
		{"sendgrid", `X-SMTPAPI: {"unique_args":{"notice_key":"`, "Ok: queued as SG%s", []ledger.State{S, S, S, S, F, S, F, S, S, C},
			map[string]float64{"payloads": 18, "settled": 9, "already_settled": 3, "unknown_message_id": 1, "malformed": 3, "irrelevant": 2}, "SG"},
		// sub 6: suppress-bounce: a resend would be suppressed again, so failed.
		{"mailgun", `X-Mailgun-Variables: {"notice_key":"`, "Great success", []ledger.State{S, S, S, F, S, F, S, R, S, C},
			map[string]float64{"payloads": 15, "settled": 9, "already_settled": 2, "unknown_message_id": 1, "malformed": 2, "irrelevant": 1}, ""},
		// sub 1: delivered, then a hard bounce: failed (ledger.HardBounceFails).
		{"postmark", "X-PM-Metadata-notice_key: ", "Ok: queued as %s-0000-0000-0000-000000000000", []ledger.State{F, F, S, S, S, S, S, S, C, C},
			map[string]float64{"payloads": 15, "settled": 9, "already_settled": 1, "unknown_message_id": 2, "malformed": 2, "irrelevant": 1}, ""},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			n := len(tc.states)
			f := newFixture(t, n, "", smtptest.WithMode(smtptest.HangAfterData), smtptest.WithReply(func(r smtptest.Received) string {
				if strings.Contains(tc.reply, "%s") {
					return strings.Replace(tc.reply, "%s", r.MessageID[:8], 1)
				}
				return tc.reply
			}))
			pol := strings.Replace(testPolicy, "concurrency: 8", "concurrency: 16\nprovider: "+tc.provider+"\nses: {configuration_set: notices}", 1)
			if err := os.WriteFile(f.policy, []byte(pol), 0o644); err != nil {
				t.Fatal(err)
			}

			// The pass hands every message over and hears nothing back.
			c := f.start(f.env(), "run", "--batch-size", "20")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := f.smtp.Wait(ctx, n); err != nil {
				c.kill()
				t.Fatalf("the server did not read %d messages: %v", n, err)
			}
			c.kill()
			if r := c.wait(); !r.killed {
				t.Fatalf("the pass ended on its own: exit %d\n%s", r.code, tail(r.stderr))
			}
			f.smtp.Release()
			f.smtp.SetMode(smtptest.Accept)
			if err := f.smtp.Idle(ctx); err != nil {
				t.Fatal(err)
			}
			for _, m := range f.smtp.Messages() {
				if !strings.Contains(string(m.Raw), "\r\n"+tc.header) {
					t.Fatalf("message %s lacks %q", m.MessageID, tc.header)
				}
			}
			if c := f.counts(); c[C] != n {
				t.Fatalf("after the hang: %v, want %d claimed", c, n)
			}

			path := filepath.Join(t.TempDir(), "events")
			if err := os.WriteFile(path, []byte(f.providerEvents(tc.provider)), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := f.runIn(nil, "reconcile", "--events", path, "--format", tc.provider)
			if code != 0 {
				t.Fatalf("reconcile: exit %d\n%s", code, errOut)
			}
			lines := jsonLines[map[string]any](t, out)
			sum := lines[len(lines)-1]
			for k, v := range tc.summary {
				if sum[k] != v {
					t.Errorf("reconcile %s = %v, want %v (summary %v)", k, sum[k], v, sum)
				}
			}
			if !strings.Contains(errOut, "skipped") {
				t.Errorf("stderr names no skipped payload:\n%s", errOut)
			}
			rows := f.rows()
			retry := 0
			for i, want := range tc.states {
				if got := rows[subID(i+1)].State; got != want {
					t.Errorf("%s: %s, want %s", subID(i+1), got, want)
				}
				if want == R {
					retry++
				}
			}

			// The same payloads again change nothing.
			code, out, _ = f.runIn(nil, "reconcile", "--events", path, "--format", tc.provider)
			if lines := jsonLines[map[string]any](t, out); code != 0 || len(lines) != 1 || lines[0]["settled"] != float64(0) {
				t.Fatalf("second reconcile: exit %d\n%s", code, out)
			}

			// The next pass sends only what the provider said never left.
			s, _ := f.passIn(nil)
			if s.Minted != 0 || s.Retried != retry || s.Sent != retry {
				t.Fatalf("pass after reconcile = %+v, want %d retried and sent", s, retry)
			}
			rec := f.received()
			for i, st := range tc.states {
				id := subID(i + 1)
				want := 1
				if st == R {
					want = 2 // the provider proved it never left
				}
				if got := rec[f.msgID(id)]; got != want {
					t.Errorf("%s (%s after reconcile) received %d times, want %d", id, st, got, want)
				}
				if st != R {
					continue
				}
				var pid string
				if err := f.db.Get(&pid, `SELECT COALESCE(provider_id, '') FROM notice_ledger WHERE subscription_id = $1`, id); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(pid, tc.wantID) || strings.Contains(pid, " ") || (tc.wantID == "") != (pid == "") {
					t.Errorf("%s: provider_id %q, want the id from the reply %q, or none", id, pid, tc.reply)
				}
			}
			if c := f.counts(); c[C] != countState(tc.states, C) {
				t.Errorf("quarantine after the pass: %v", c)
			}
		})
	}
}

func countState(ss []ledger.State, s ledger.State) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}

// --format is checked before anything is opened.
func TestReconcileFormatUsage(t *testing.T) {
	t.Parallel()
	var out, errb strings.Builder
	code := run(context.Background(), []string{"reconcile", "--events", "-", "--format", "sparkpost"},
		func(string) string { return "" }, strings.NewReader(""), &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "--format") || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}
