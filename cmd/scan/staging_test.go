package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"scan/internal/metrics/metricstest"

	"github.com/spf13/pflag"
)

// With no sender configured a pass writes .eml files to the outbox: a
// laptop pointed at a staging copy mails nobody.
func TestStagingDefaultSenderIsOutbox(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 12, "")
	dir := filepath.Join(t.TempDir(), "outbox")
	code, out, errOut := runCaptured(f.getenv("SCAN_SENDER=", "SMTP_URL=", "SCAN_OUTBOX_DIR="+dir), "run")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, tail(errOut))
	}
	if s := lastSummary(t, out, errOut); s.Sent != 12 {
		t.Errorf("sent %d, want 12", s.Sent)
	}
	emls, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	if len(emls) != 12 {
		t.Errorf("%d .eml files in the outbox, want 12", len(emls))
	}
	if f.smtp.Total() != 0 {
		t.Errorf("the SMTP server got %d messages; the default sender must not mail", f.smtp.Total())
	}
}

// SCAN_REDIRECT_TO delivers every notice to one inbox, records the
// redirect on every ledger row, and still paces each notice in its
// original domain's bucket (the metrics label the original domain).
// --redirect-to takes precedence over the variable.
func TestStagingRedirect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{name: "env", env: []string{"SCAN_REDIRECT_TO=qa@staging.example.net"}},
		{name: "flag wins", env: []string{"SCAN_REDIRECT_TO=wrong@staging.example.net"}, args: []string{"--redirect-to", "qa@staging.example.net"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 16
			original := regexp.MustCompile(`user\d+@`)
			f := newFixture(t, n, "")
			gw := metricstest.New(t)
			env := append([]string{"PUSHGATEWAY_URL=" + gw.URL, "SCAN_CONFIG=" + writePolicy(t, observePolicy)}, tc.env...)
			code, out, errOut := runCaptured(f.getenv(env...), append([]string{"run"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, tail(errOut))
			}
			if s := lastSummary(t, out, errOut); s.Sent != n {
				t.Fatalf("sent %d, want %d", s.Sent, n)
			}
			for _, m := range f.smtp.Messages() {
				if len(m.To) != 1 || m.To[0] != "qa@staging.example.net" {
					t.Errorf("envelope recipients %v, want only the redirect", m.To)
				}
				if !strings.Contains(string(m.Raw), "qa@staging.example.net") || original.Match(m.Raw) {
					t.Errorf("message still names an original recipient:\n%s", m.Raw)
				}
			}
			if f.smtp.Total() != n {
				t.Errorf("server read %d, want %d", f.smtp.Total(), n)
			}
			var redirected []string
			if err := f.db.Select(&redirected, `SELECT coalesce(redirected_to, '') FROM notice_ledger`); err != nil {
				t.Fatal(err)
			}
			for _, r := range redirected {
				if r != "qa@staging.example.net" {
					t.Errorf("ledger redirected_to = %q, want the redirect", r)
				}
			}
			// A quarter of the fixture's recipients are at example.com, the
			// policy's named domain: their bucket still applies.
			g := gw.Group("job=scan,shard=0")
			got := uint64(0)
			for _, m := range metricstest.Matching(g["scan_rate_limit_wait_seconds"], map[string]string{"domain": "example.com"}) {
				got += m.GetHistogram().GetSampleCount()
			}
			if got != n/4 {
				t.Errorf("%d notices paced in example.com's bucket, want %d (the original domain, not the redirect's)", got, n/4)
			}
		})
	}
}

// A loopback SMTP or HTTP endpoint (a local Mailpit, a test receiver) is
// always allowed, without SCAN_ENVIRONMENT or a redirect, and gets the
// real recipients.
func TestStagingLoopbackAlwaysAllowed(t *testing.T) {
	t.Parallel()
	t.Run("smtp", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 8, "")
		code, out, errOut := runCaptured(f.getenv("SCAN_ENVIRONMENT=", "SCAN_REDIRECT_TO="), "run")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, tail(errOut))
		}
		if s := lastSummary(t, out, errOut); s.Sent != 8 || f.smtp.Total() != 8 {
			t.Errorf("sent %d, server read %d; want 8", s.Sent, f.smtp.Total())
		}
		for _, m := range f.smtp.Messages() {
			if len(m.To) != 1 || !strings.HasPrefix(m.To[0], "user") {
				t.Errorf("recipient %v, want the subscriber's own address", m.To)
			}
		}
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 8, "")
		var mu sync.Mutex
		var tos []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				To string `json:"to"`
			}
			b, _ := io.ReadAll(r.Body)
			if err := json.Unmarshal(b, &body); err != nil || r.Header.Get("Idempotency-Key") == "" {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			mu.Lock()
			tos = append(tos, body.To)
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
		}))
		t.Cleanup(srv.Close)
		code, out, errOut := runCaptured(f.getenv("SCAN_SENDER=http", "SCAN_HTTP_URL="+srv.URL+"/notices"), "run")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, tail(errOut))
		}
		mu.Lock()
		defer mu.Unlock()
		if s := lastSummary(t, out, errOut); s.Sent != 8 || len(tos) != 8 {
			t.Errorf("sent %d, endpoint got %d; want 8", s.Sent, len(tos))
		}
	})
}

// The smtp and http senders refuse (exit 2, nothing written) to reach a
// host that is not loopback unless SCAN_ENVIRONMENT=production or a
// redirect is set. No connection is attempted: the check comes first.
func TestStagingRefusesRemoteDelivery(t *testing.T) {
	t.Parallel()
	for name, env := range map[string][]string{
		"smtp":                    {"SCAN_SENDER=smtp", "SMTP_URL=smtp://mail.example.com:587"},
		"smtps":                   {"SCAN_SENDER=smtp", "SMTP_URL=smtps://u:p@mail.example.com:465"},
		"http":                    {"SCAN_SENDER=http", "SCAN_HTTP_URL=https://mail-api.example.com/send"},
		"environment not exactly": {"SCAN_SENDER=smtp", "SMTP_URL=smtp://mail.example.com:587", "SCAN_ENVIRONMENT=Production"},
		"staging environment":     {"SCAN_SENDER=http", "SCAN_HTTP_URL=https://mail-api.example.com/send", "SCAN_ENVIRONMENT=staging"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 3, "")
			dir := filepath.Join(t.TempDir(), "outbox")
			code, _, errOut := runCaptured(f.getenv(append(env, "SCAN_OUTBOX_DIR="+dir)...), "run")
			if code != exitUsage {
				t.Fatalf("exit %d, want 2\n%s", code, tail(errOut))
			}
			if !strings.Contains(errOut, "SCAN_ENVIRONMENT=production") || !strings.Contains(errOut, "SCAN_REDIRECT_TO") {
				t.Errorf("the refusal does not say how to proceed:\n%s", errOut)
			}
			if c := f.counts(); len(c) != 0 {
				t.Errorf("ledger rows written: %v", c)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("outbox created (%v)", err)
			}
		})
	}
}

// Which endpoints preparePass lets through. Nothing here connects.
func TestStagingRemoteCheck(t *testing.T) {
	t.Parallel()
	// Production refuses the built-in sample from, cancel_url and
	// message_id_domain.
	own := writePolicy(t, "from: \"Acme <notices@acme.test>\"\ncancel_url: \"https://acme.test/c/{token}\"\nmessage_id_domain: notices.acme.test\n")
	base := map[string]string{"NOTICE_KEY_SECRET": testSecret, "SCAN_CONFIG": own}
	for _, tc := range []struct {
		name string
		env  map[string]string
		ok   bool
	}{
		{"production smtp", map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://mail.example.com:587", "SCAN_ENVIRONMENT": "production"}, true},
		{"production http", map[string]string{"SCAN_SENDER": "http", "SCAN_HTTP_URL": "https://api.example.com/x", "SCAN_ENVIRONMENT": "production"}, true},
		{"redirect smtp", map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://mail.example.com:587", "SCAN_REDIRECT_TO": "qa@example.net"}, true},
		{"redirect http", map[string]string{"SCAN_SENDER": "http", "SCAN_HTTP_URL": "https://api.example.com/x", "SCAN_REDIRECT_TO": "qa@example.net"}, true},
		{"127.0.0.1", map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://127.0.0.1:1025"}, true},
		{"127.0.0.2", map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://127.0.0.2:1025"}, true},
		{"localhost", map[string]string{"SCAN_SENDER": "http", "SCAN_HTTP_URL": "http://localhost:8080/x"}, true},
		{"::1", map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://[::1]:1025"}, true},
		{"remote smtp", map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://mail.example.com:587"}, false},
		{"private address", map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://10.0.0.5:25"}, false},
		{"localhost lookalike", map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://localhost.example.com:25"}, false},
		{"outbox", map[string]string{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{}
			for k, v := range base {
				vars[k] = v
			}
			for k, v := range tc.env {
				vars[k] = v
			}
			e := &env{getenv: func(k string) string { return vars[k] }, stdout: io.Discard, stderr: io.Discard}
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			var rf runFlags
			rf.register(fs, true)
			if err := fs.Parse(nil); err != nil {
				t.Fatal(err)
			}
			_, err := preparePass(e, fs, &rf)
			if tc.ok && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tc.ok && err == nil {
				t.Error("allowed a remote endpoint outside production without a redirect")
			}
		})
	}
}
