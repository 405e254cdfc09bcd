package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"scan/internal/ledger"
)

// Provider failover (issue 36): SCAN_SENDER=ses,smtp against an SES
// stand-in in front of the fixture's real SMTP server.

// sesFailing is an SES v2 stand-in that answers every SendEmail with
// answer, counting the requests.
type sesFailing struct {
	srv *httptest.Server
	n   atomic.Int64
}

func newSESFailing(t *testing.T, answer http.HandlerFunc) *sesFailing {
	t.Helper()
	s := &sesFailing{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.n.Add(1)
		answer(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// sesPaused answers as SES does for an account whose sending is paused.
func sesPaused(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", "SendingPausedException")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, `{"message":"Sending is paused for this account."}`)
}

// sesUnavailable answers 503 every time.
func sesUnavailable(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
}

// sesVanishes reads the request and drops the connection without an
// answer: SES may have accepted the message.
func sesVanishes(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// failoverEnv is the child's environment for SCAN_SENDER=ses,smtp: SES at
// s, then the fixture's SMTP server; the policy's provider is ses.
func (f *fixture) failoverEnv(s *sesFailing, extra ...string) []string {
	return f.env(append([]string{
		"SCAN_SENDER=ses,smtp",
		"AWS_REGION=eu-west-1",
		"AWS_ACCESS_KEY_ID=AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
		"AWS_ENDPOINT_URL_SESV2=" + s.srv.URL,
		"AWS_CONFIG_FILE=/nonexistent",
		"AWS_SHARED_CREDENTIALS_FILE=/nonexistent",
		"AWS_EC2_METADATA_DISABLED=true",
	}, extra...)...)
}

func (f *fixture) failoverPolicy() {
	f.setPolicy(strings.Replace(testPolicy, "concurrency: 8", "concurrency: 8\nprovider: ses", 1))
}

// senders returns the sender column by subscription id.
func (f *fixture) senders() map[string]string {
	f.t.Helper()
	var rs []struct {
		ID     string  `db:"subscription_id"`
		Sender *string `db:"sender"`
	}
	if err := f.db.Select(&rs, `SELECT subscription_id, sender FROM notice_ledger`); err != nil {
		f.t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rs {
		out[r.ID] = ""
		if r.Sender != nil {
			out[r.ID] = *r.Sender
		}
	}
	return out
}

// SES refuses the account (SendingPausedException), then in a second
// world answers 503 every time: either way every notice goes through SMTP
// exactly once, the pass completes (exit 0), the summary counts them as
// failover, and lookup names smtp as the sender.
func TestFailoverSESToSMTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer http.HandlerFunc
	}{
		{"paused", sesPaused},
		{"unavailable", sesUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 30
			f := newFixture(t, n, "")
			f.failoverPolicy()
			ses := newSESFailing(t, tc.answer)
			s := f.mustRun(f.failoverEnv(ses))
			tl := f.check(true)
			if s.Sent != n || s.Failover != n || tl.sent != n || tl.received != n {
				t.Fatalf("summary %+v; %v; want %d sent once, all by failover", s, tl, n)
			}
			if got := ses.n.Load(); got == 0 || got > n {
				t.Errorf("SES asked %d times", got)
			}
			for id, sender := range f.senders() {
				if sender != "smtp" {
					t.Errorf("%s: sender %q, want smtp", id, sender)
				}
			}
			code, out, errOut := f.runIn(nil, "lookup", subID(1), "-o", "json")
			if code != 0 {
				t.Fatalf("lookup: exit %d\n%s", code, errOut)
			}
			if rows := jsonLines[map[string]any](t, out); len(rows) != 1 || rows[0]["sender"] != "smtp" {
				t.Fatalf("lookup: %s", out)
			}
			// A second pass finds nothing to send, and SMTP got nothing more.
			if s := f.mustRun(f.failoverEnv(ses)); s.Minted != 0 || s.Sent != 0 || f.smtp.Total() != n {
				t.Fatalf("second pass %+v, SMTP got %d", s, f.smtp.Total())
			}
		})
	}
}

// SES takes each request and drops the connection without an answer:
// each of those notices may have been accepted, so it stays in quarantine
// (ambiguous) and SMTP never gets it, however many there are.
func TestFailoverNeverMovesAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	const n = 12
	f := newFixture(t, n, "")
	f.failoverPolicy()
	ses := newSESFailing(t, sesVanishes)
	s := f.mustRun(f.failoverEnv(ses))
	if s.Ambiguous != n || s.Sent != 0 || s.Failover != 0 || f.smtp.Total() != 0 {
		t.Fatalf("summary %+v; SMTP got %d; want %d ambiguous and nothing through SMTP", s, f.smtp.Total(), n)
	}
	if c := f.counts(); c[ledger.Claimed] != n {
		t.Fatalf("ledger %v, want %d claimed", c, n)
	}
	for id, sender := range f.senders() {
		if sender != "ses" {
			t.Errorf("%s: sender %q, want ses (the attempt's, in quarantine)", id, sender)
		}
	}
	if s := f.mustRun(f.failoverEnv(ses)); s.Sent != 0 || f.smtp.Total() != 0 || s.Quarantine != n {
		t.Fatalf("second pass %+v; SMTP got %d", s, f.smtp.Total())
	}
}

// SIGKILL while the pass moves from SES (paused) to SMTP, at the 1st, 5th
// and 17th message SMTP reads: the next pass (SES still paused) sends the
// rest through SMTP, the claims of the killed pass stay in quarantine
// (those SMTP read too), and no Message-ID reaches SMTP twice.
func TestFailoverKilledDuringTheSwitch(t *testing.T) {
	t.Parallel()
	for _, k := range []int64{1, 5, 17} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			t.Parallel()
			const n = 40
			f := newFixture(t, n, "")
			f.failoverPolicy()
			ses := newSESFailing(t, sesPaused)
			f.killAtMessage(1, k, f.failoverEnv(ses), "run", "--batch-size", "10")
			s := f.mustRun(f.failoverEnv(ses))
			tl := f.check(true)
			// check fails the test on any Message-ID received twice; what
			// SMTP read before the kill stays in quarantine, unsent again.
			if tl.sent+tl.quarantined != n || tl.received != tl.sent+tl.quarantinedDelivered || s.Failover != s.Sent {
				t.Fatalf("after the kill at %d and a rerun: %v; rerun %+v", k, tl, s)
			}
			t.Logf("kill at %d: %v; rerun %+v", k, tl, s)
		})
	}
}

// A list is checked at load: each name once, each a sender, and no sender
// that needs a provider's correlation headers other than the policy's
// provider. Exit 2 naming SCAN_SENDER, nothing written.
func TestFailoverUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "")
	ses := newSESFailing(t, sesPaused)
	for _, tc := range []struct {
		sender, provider string
	}{
		{"ses,smtp", ""},         // ses's events need the policy's provider to be ses
		{"ses,smtp", "sendgrid"}, // two providers' headers
		{"smtp,smtp", "ses"},
		{"ses,pigeon", "ses"},
		{"ses,", "ses"},
	} {
		pol := testPolicy
		if tc.provider != "" {
			pol = strings.Replace(testPolicy, "concurrency: 8", "concurrency: 8\nprovider: "+tc.provider, 1)
		}
		f.setPolicy(pol)
		r := f.scan(f.failoverEnv(ses, "SCAN_SENDER="+tc.sender), "run")
		if r.code != 2 || !strings.Contains(r.stderr, "SCAN_SENDER") {
			t.Errorf("%q with provider %q: exit %d, stderr %q; want exit 2 naming SCAN_SENDER", tc.sender, tc.provider, r.code, r.stderr)
		}
	}
	if c := f.counts(); len(c) != 0 || ses.n.Load() != 0 || f.smtp.Total() != 0 {
		t.Fatalf("a refused list wrote %v, asked SES %d times, SMTP got %d", c, ses.n.Load(), f.smtp.Total())
	}
}
