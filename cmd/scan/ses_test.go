package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"scan/internal/ledger"
)

// sesStandIn is a local HTTP server in place of the SES v2 endpoint. It
// answers each SendEmail with answer(n) for the n-th request (from 1); an
// answer of "" never answers (until the test ends).
type sesStandIn struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    []string // the notice_key tag of each request, in order
	changed chan struct{}
}

func newSESStandIn(t *testing.T, answer func(n int) string) *sesStandIn {
	t.Helper()
	s := &sesStandIn{changed: make(chan struct{}, 1000)}
	done := make(chan struct{})
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			EmailTags []struct{ Name, Value string }
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		s.mu.Lock()
		key := ""
		for _, tag := range body.EmailTags {
			if tag.Name == "notice_key" {
				key = tag.Value
			}
		}
		s.keys = append(s.keys, key)
		n := len(s.keys)
		s.mu.Unlock()
		s.changed <- struct{}{}
		a := answer(n)
		if a == "" {
			<-done
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"MessageId":%q}`, a)
	}))
	t.Cleanup(func() { close(done); s.srv.Close() })
	return s
}

// wait returns once n requests have arrived.
func (s *sesStandIn) wait(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got := len(s.keys)
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d SendEmail requests: %w", got, n, ctx.Err())
		}
	}
}

func (s *sesStandIn) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// sesEnv is the child's environment for SCAN_SENDER=ses against s: the
// SDK's standard variables, and nothing of this machine's AWS setup.
func (f *fixture) sesEnv(s *sesStandIn, extra ...string) []string {
	return f.env(append([]string{
		"SCAN_SENDER=ses",
		"AWS_REGION=eu-west-1",
		"AWS_ACCESS_KEY_ID=AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
		"AWS_ENDPOINT_URL_SESV2=" + s.srv.URL,
		"AWS_CONFIG_FILE=/nonexistent",
		"AWS_SHARED_CREDENTIALS_FILE=/nonexistent",
		"AWS_EC2_METADATA_DISABLED=true",
	}, extra...)...)
}

// SCAN_SENDER=ses: every notice goes out once through SendEmail, tagged
// with its key, and SES's MessageId is stored as provider_id.
func TestSESSenderPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 6, "")
	ses := newSESStandIn(t, func(n int) string { return fmt.Sprintf("0100019abc%04d-000000", n) })
	s := f.mustRun(f.sesEnv(ses))
	if s.Sent != 6 || s.Minted != 6 {
		t.Fatalf("summary %+v", s)
	}
	keys := ses.requests()
	if len(keys) != 6 {
		t.Fatalf("%d SendEmail requests, want 6", len(keys))
	}
	var rows []struct {
		Key  string `db:"notice_key"`
		Prov string `db:"provider_id"`
	}
	if err := f.db.Select(&rows, `SELECT notice_key, provider_id FROM notice_ledger WHERE state = 'sent'`); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]bool{}
	for _, k := range keys {
		byKey[k] = true
	}
	for _, r := range rows {
		if !byKey[r.Key] || !strings.HasPrefix(r.Prov, "0100019abc") {
			t.Errorf("row %s: provider_id %q, tagged %v", r.Key[:12], r.Prov, byKey[r.Key])
		}
	}
	if len(rows) != 6 {
		t.Fatalf("%d sent rows", len(rows))
	}
	// A single sender's name is the sender of each attempt (issue 36).
	for id, sender := range f.senders() {
		if sender != "ses" {
			t.Errorf("%s: sender %q, want ses", id, sender)
		}
	}
	// A second pass sends nothing.
	if s := f.mustRun(f.sesEnv(ses)); s.Minted != 0 || s.Sent != 0 || len(ses.requests()) != 6 {
		t.Fatalf("second pass %+v, %d requests", s, len(ses.requests()))
	}
}

// SES takes every request and never answers: the pass is killed with
// every claim in quarantine and nothing sent twice; SES's events (an SNS
// notification per delivery) settle them; the next pass sends nothing.
func TestSESSenderNoAnswerQuarantines(t *testing.T) {
	t.Parallel()
	const n = 5
	f := newFixture(t, n, "")
	ses := newSESStandIn(t, func(int) string { return "" })
	c := f.start(f.sesEnv(ses), "run", "--batch-size", "20")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := ses.wait(ctx, n); err != nil {
		c.kill()
		t.Fatal(err)
	}
	c.kill()
	if r := c.wait(); !r.killed {
		t.Fatalf("the pass ended on its own: exit %d\n%s", r.code, tail(r.stderr))
	}
	if c := f.counts(); c[ledger.Claimed] != n {
		t.Fatalf("after the lost answers: %v, want %d claimed", c, n)
	}
	if len(ses.requests()) != n {
		t.Fatalf("%d requests for %d notices", len(ses.requests()), n)
	}
	var events strings.Builder
	for i := 1; i <= n; i++ {
		ev := fmt.Sprintf(`{"eventType":"Delivery","mail":{"timestamp":"2026-11-30T02:00:00Z","messageId":"0100019-%d","tags":{"notice_key":[%q]}},"delivery":{"timestamp":"2026-11-30T02:00:01Z"}}`,
			i, f.key(subID(i), 0, testSecret))
		env, _ := json.Marshal(map[string]string{"Type": "Notification", "MessageId": fmt.Sprint(i), "Message": ev})
		events.Write(env)
		events.WriteString("\n")
	}
	code, out, errOut := f.runInWith(nil, events.String(), "reconcile", "--events", "-", "--format", "ses")
	if code != 0 {
		t.Fatalf("reconcile: exit %d\n%s", code, errOut)
	}
	if lines := jsonLines[map[string]any](t, out); lines[len(lines)-1]["settled"] != float64(n) {
		t.Fatalf("reconcile: %s", out)
	}
	if s := f.mustRun(f.sesEnv(newSESStandIn(t, func(int) string { return "x" }))); s.Minted != 0 || s.Sent != 0 || s.Quarantine != 0 {
		t.Fatalf("pass after reconcile = %+v", s)
	}
}

// SCAN_SENDER=ses refuses, with exit 2 and one line naming the field,
// what would reach Amazon outside production or cannot work.
func TestSESSenderUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	ses := newSESStandIn(t, func(int) string { return "x" })
	for _, tc := range []struct {
		env   []string
		field string
	}{
		{[]string{"AWS_ENDPOINT_URL_SESV2="}, "SCAN_SENDER"},
		{[]string{"AWS_ENDPOINT_URL_SESV2=https://email.eu-west-1.amazonaws.com"}, "AWS_ENDPOINT_URL_SESV2"},
		{[]string{"AWS_ENDPOINT_URL_SESV2=", "AWS_ENDPOINT_URL=http://ses.example.com", "SCAN_ENVIRONMENT=production"}, "AWS_ENDPOINT_URL"},
		{[]string{"AWS_REGION="}, "AWS_REGION"},
	} {
		r := f.scan(f.sesEnv(ses, tc.env...), "run")
		if r.code != 2 || !strings.Contains(r.stderr, tc.field) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %s", tc.env, r.code, r.stderr, tc.field)
		}
	}
	if len(ses.requests()) != 0 || f.counts()[ledger.Claimed] != 0 {
		t.Fatal("a refused pass wrote or sent something")
	}
}
