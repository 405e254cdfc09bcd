package scan_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/message"
	"scan/internal/policy"
	"scan/internal/scan"
	"scan/internal/send"
)

// row is one subscriptions row as the bad-row tests write it; nil pointers
// are NULL. renewsIn and period are relative to now unless the pointers
// say otherwise.
type row struct {
	id                       string
	email, name, plan, juris *string
	nullRenews, nullPeriod   bool
	renewsIn                 time.Duration // default 48h: inside the default window
}

func str(s string) *string { return &s }

func insertRows(t *testing.T, e *env, rows ...row) {
	t.Helper()
	for _, r := range rows {
		renewsIn := r.renewsIn
		if renewsIn == 0 {
			renewsIn = 48 * time.Hour
		}
		var renews, period any = now.Add(renewsIn), "2026-12-01"
		if r.nullRenews {
			renews = nil
		}
		if r.nullPeriod {
			period = nil
		}
		if _, err := e.db.Exec(`INSERT INTO subscriptions (id, email, renews_at, period_start, jurisdiction, name, plan)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, r.id, r.email, renews, period, r.juris, r.name, r.plan); err != nil {
			t.Fatalf("insert %q: %v", r.id, err)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the pass's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// loggedPass runs one pass at `at` with policy pol, sending to the test's
// SMTP server, and returns its summary and its JSON log.
func loggedPass(t *testing.T, e *env, pol *policy.Policy, at time.Time) (scan.Summary, string) {
	t.Helper()
	sender, err := send.NewSMTP(send.SMTPConfig{URL: e.smtp.URL(), Pool: 4, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	r, err := message.NewRenderer(message.RenderConfig{From: pol.From, MessageIDDomain: pol.MessageIDDomain, CancelURL: pol.CancelURL})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	sc, err := newPass(context.Background(), e.db, sender, r, zerolog.New(&logs).Level(zerolog.DebugLevel), scan.Config{
		Policy: pol, Secret: []byte(secret), RunID: fmt.Sprintf("run-%d", time.Now().UnixNano()), Now: at,
		BatchSize: 7, Retry: send.RetryPolicy{Attempts: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sc.Run(context.Background())
	if err != nil {
		t.Fatalf("pass: %v\nlog:\n%s", err, logs.String())
	}
	if s.Minted+s.Retried != s.Sent+s.Retry+s.Failed+s.Ambiguous {
		t.Fatalf("summary does not balance: %+v", s)
	}
	return s, logs.String()
}

// invalidLogged returns, per subscription id (as logged), the reasons the
// log gives for skipping it.
func invalidLogged(t *testing.T, logs string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Msg    string `json:"message"`
			ID     string `json:"subscription_id"`
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		if strings.HasPrefix(l.Msg, "invalid subscription row") {
			out[l.ID] = append(out[l.ID], l.Reason)
		}
	}
	return out
}

func withUnknownJurisdiction(t *testing.T, mode string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse(strings.NewReader(testPolicy + "unknown_jurisdiction: " + mode + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Every kind of bad row is counted invalid, logged once per pass by id and
// reason with no address, and claims nothing; fixed, it is sent by the
// next pass while its window is open. The pass never stops for one row.
func TestBadRowsClaimNothingUntilFixed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pol := withUnknownJurisdiction(t, policy.UnknownInvalid)
	longID := strings.Repeat("i", 256)
	long := strings.Repeat("a", 64) + "@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 60) + ".com" // 258 octets
	bad := []struct {
		row    row
		reason string // a word the logged reason must contain
		fix    string // SQL SET clause that makes the row valid
	}{
		{row{id: "null_email"}, "no email", "email = 'null-email@x.com'"},
		{row{id: "empty_email", email: str("")}, "no email", "email = 'empty-email@x.com'"},
		{row{id: "no_at", email: str("no-at.x.com")}, "no_at", "email = 'no-at@x.com'"},
		{row{id: "two_at", email: str("two@at@x.com")}, "multiple_at", "email = 'two-at@x.com'"},
		{row{id: "space", email: str("sp ace@x.com")}, "invalid_char", "email = 'space@x.com'"},
		{row{id: "leading_space", email: str(" lead@x.com")}, "invalid_char", "email = 'lead@x.com'"},
		{row{id: "too_long", email: str(long)}, "too_long", "email = 'long@x.com'"},
		{row{id: "cr_email", email: str("cr@x.com\rBcc: victim@y.com")}, "crlf", "email = 'cr@x.com'"},
		{row{id: "lf_email", email: str("lf@x.com\nBcc: victim@y.com")}, "crlf", "email = 'lf@x.com'"},
		{row{id: "crlf_name", email: str("crlf-name@x.com"), name: str("Eve\r\nBcc: victim@y.com")}, "name", "name = 'Eve'"},
		{row{id: "lf_name", email: str("lf-name@x.com"), name: str("Eve\nX-Injected: 1")}, "name", "name = 'Eve'"},
		{row{id: "esc_name", email: str("esc-name@x.com"), name: str("Eve\x1b[31m")}, "name", "name = 'Eve'"},
		{row{id: "crlf_plan", email: str("crlf-plan@x.com"), plan: str("Pro\r\nBcc: victim@y.com")}, "plan", "plan = 'Pro'"},
		{row{id: "nel_plan", email: str("nel-plan@x.com"), plan: str("Pro\u0085Bcc: victim@y.com")}, "plan", "plan = 'Pro'"},
		{row{id: "null_renews", email: str("null-renews@x.com"), nullRenews: true}, "renews_at", "renews_at = '" + now.Add(48*time.Hour).Format(time.RFC3339) + "'"},
		{row{id: "null_period", email: str("null-period@x.com"), nullPeriod: true}, "period_start", "period_start = '2026-12-01'"},
		{row{id: "unknown_juris", email: str("unknown-juris@x.com"), juris: str("XX-NOWHERE")}, "jurisdiction", "jurisdiction = NULL"},
		{row{id: longID, email: str("long-id@x.com")}, "over 255 bytes", ""}, // an id cannot be fixed in place
	}
	good := []row{
		{id: "ok_plain", email: str("plain@x.com"), name: str("Zoë\tO'Brien"), plan: str("Pro — yearly")},
		{id: "ok_known_juris", email: str("known@x.com"), juris: str("US-CA"), renewsIn: 20 * 24 * time.Hour},
		{id: "ok_254", email: str(strings.Repeat("a", 64) + "@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 56) + ".com")},
		// A name or plan of any length is no reason to skip a notice: the
		// message cuts them (message.MaxNameLen, message.MaxPlanLen).
		{id: "ok_long_name_plan", email: str("long-name@x.com"), name: str(strings.Repeat("Nöm ", 1<<18)), plan: str(strings.Repeat("P", 1<<20))},
	}
	for _, b := range bad {
		insertRows(t, e, b.row)
	}
	insertRows(t, e, good...)
	// A malformed (not empty) email: the notice waits in retry as
	// invalid_address from the first pass (issue 36), and the retry
	// stream sends it once fixed.
	malformed := func(r row) bool {
		return r.email != nil && *r.email != "" && r.name == nil && r.plan == nil && !r.nullRenews && !r.nullPeriod && r.juris == nil && len(r.id) <= 255
	}
	nMalformed := 0
	for _, b := range bad {
		if malformed(b.row) {
			nMalformed++
		}
	}

	addresses := []string{}
	for _, b := range bad {
		if b.row.email != nil && *b.row.email != "" {
			addresses = append(addresses, *b.row.email, strings.Split(*b.row.email, "@")[0]+"@")
		}
	}
	logID := func(id string) string {
		if len(id) > 64 {
			return id[:64] + "..."
		}
		return id
	}

	// Two passes on the first day: each counts and logs every bad row
	// once, and neither claims one.
	for pass := 1; pass <= 2; pass++ {
		s, logs := loggedPass(t, e, pol, now.Add(time.Duration(pass)*time.Hour))
		if s.Invalid != len(bad) {
			t.Errorf("pass %d: invalid = %d, want %d (%+v)", pass, s.Invalid, len(bad), s)
		}
		// The re-run counts the rows waiting as invalid_address once, as
		// invalid: not as suppressed (handled elsewhere) too.
		if wantSup := map[int]int{2: len(good)}[pass]; s.Eligible != len(good) || s.Suppressed != wantSup {
			t.Errorf("pass %d: eligible %d suppressed %d, want %d and %d (%+v)", pass, s.Eligible, s.Suppressed, len(good), wantSup, s)
		}
		if pass == 1 && (s.Minted != len(good) || s.Sent != len(good)) {
			t.Errorf("pass %d: minted %d sent %d, want %d (%+v)", pass, s.Minted, s.Sent, len(good), s)
		}
		got := invalidLogged(t, logs)
		for _, b := range bad {
			reasons := got[logID(b.row.id)]
			if len(reasons) != 1 || !strings.Contains(reasons[0], b.reason) {
				t.Errorf("pass %d: %s logged %q, want once with %q", pass, logID(b.row.id), reasons, b.reason)
			}
		}
		if len(got) != len(bad) {
			t.Errorf("pass %d: %d ids logged invalid, want %d: %v", pass, len(got), len(bad), got)
		}
		for _, a := range addresses {
			if strings.Contains(logs, a) {
				t.Errorf("pass %d: the log contains the address %q", pass, a)
			}
		}
		for _, b := range bad {
			want := ledger.State("")
			if malformed(b.row) {
				want = ledger.Retry // no other channel: waits as invalid_address, unclaimed
			}
			if st := e.state(b.row.id); st != want {
				t.Errorf("pass %d: bad row %s has a ledger row %q, want %q", pass, logID(b.row.id), st, want)
			}
		}
		if want := map[int]int{1: nMalformed}[pass]; s.InvalidAddress != want {
			t.Errorf("pass %d: invalid_address = %d, want %d", pass, s.InvalidAddress, want)
		}
	}

	// Fixed the next day, inside the window: sent by the next pass.
	fixed := 0
	for _, b := range bad {
		if b.fix == "" {
			continue
		}
		if _, err := e.db.Exec(`UPDATE subscriptions SET `+b.fix+` WHERE id = $1`, b.row.id); err != nil {
			t.Fatal(err)
		}
		fixed++
	}
	s, logs := loggedPass(t, e, pol, now.Add(12*time.Hour))
	if s.Minted != fixed-nMalformed || s.Retried != nMalformed || s.Sent != fixed || s.Invalid != len(bad)-fixed {
		t.Fatalf("after the fixes: %+v, want %d minted, %d retried, %d sent, %d invalid\n%s", s, fixed-nMalformed, nMalformed, fixed, len(bad)-fixed, logs)
	}
	for _, b := range bad {
		if b.fix != "" && e.state(b.row.id) != ledger.Sent {
			t.Errorf("fixed row %s: state %q, want sent", b.row.id, e.state(b.row.id))
		}
	}
	if e.smtp.Total() != len(good)+fixed {
		t.Errorf("SMTP received %d, want %d", e.smtp.Total(), len(good)+fixed)
	}
	// RFC 5322: no line over 998 octets, whatever the row held.
	for _, m := range e.smtp.Messages() {
		for _, line := range strings.Split(string(m.Raw), "\r\n") {
			if len(line) > 998 {
				t.Errorf("message to %v has a line of %d octets: %.60q...", m.To, len(line), line)
			}
		}
	}
}

// A jurisdiction the policy does not name: with unknown_jurisdiction
// "default" (the default) it gets the kind's default window; with
// "invalid" it is counted invalid and nothing is claimed.
func TestUnknownJurisdiction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode             string
		minted, invalid  int
		stateIn, stateLA ledger.State
	}{
		{policy.UnknownDefault, 2, 0, ledger.Sent, ""},
		{policy.UnknownInvalid, 1, 1, "", ""},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			insertRows(t, e,
				row{id: "de", email: str("de@x.com"), juris: str("DE")},                                         // default window: due
				row{id: "de_early", email: str("early@x.com"), juris: str("DE"), renewsIn: 20 * 24 * time.Hour}, // not in the default window
				row{id: "none", email: str("none@x.com")},                                                       // no jurisdiction: default window
			)
			s, logs := loggedPass(t, e, withUnknownJurisdiction(t, tc.mode), now)
			if s.Minted != tc.minted || s.Invalid != tc.invalid {
				t.Fatalf("summary %+v, want minted %d invalid %d\n%s", s, tc.minted, tc.invalid, logs)
			}
			if e.state("de") != tc.stateIn || e.state("de_early") != tc.stateLA || e.state("none") != ledger.Sent {
				t.Fatalf("states de=%q de_early=%q none=%q", e.state("de"), e.state("de_early"), e.state("none"))
			}
			if tc.mode == policy.UnknownInvalid {
				if got := invalidLogged(t, logs)["de"]; len(got) != 1 || !strings.Contains(got[0], "jurisdiction") {
					t.Fatalf("de logged %q", got)
				}
			}
		})
	}
}

// Domains are lower-cased and converted to ASCII: the recorded domain (the
// key of the rate bucket) and the envelope recipient are the same for
// GMail.COM and gmail.com, and an internationalised domain is sent in its
// ASCII form.
func TestDomainsAreNormalisedForTheBucket(t *testing.T) {
	t.Parallel()
	e := setup(t)
	insertRows(t, e,
		row{id: "upper", email: str("Alice@GMail.COM")},
		row{id: "lower", email: str("bob@gmail.com")},
		row{id: "idn", email: str("carol@bücher.example")},
		row{id: "idn_upper", email: str("dave@BÜCHER.Example")},
		row{id: "punycode", email: str("erin@XN--BCHER-KVA.example")},
	)
	s, _ := loggedPass(t, e, e.pol, now)
	if s.Sent != 5 || s.Invalid != 0 {
		t.Fatalf("summary = %+v", s)
	}
	want := map[string]struct{ domain, rcpt string }{
		"upper":     {"gmail.com", "Alice@gmail.com"},
		"lower":     {"gmail.com", "bob@gmail.com"},
		"idn":       {"xn--bcher-kva.example", "carol@xn--bcher-kva.example"},
		"idn_upper": {"xn--bcher-kva.example", "dave@xn--bcher-kva.example"},
		"punycode":  {"xn--bcher-kva.example", "erin@xn--bcher-kva.example"},
	}
	rcpts := map[string]bool{}
	for _, m := range e.smtp.Messages() {
		for _, to := range m.To {
			rcpts[to] = true
		}
	}
	for id, w := range want {
		rows, err := ledger.BySubscription(context.Background(), e.db, id)
		if err != nil || len(rows) != 1 || rows[0].Domain == nil {
			t.Fatalf("%s: rows %+v, %v", id, rows, err)
		}
		if *rows[0].Domain != w.domain {
			t.Errorf("%s: bucket domain %q, want %q", id, *rows[0].Domain, w.domain)
		}
		if !rcpts[w.rcpt] {
			t.Errorf("%s: no message to %s (received for %v)", id, w.rcpt, rcpts)
		}
	}
}

// A row with CR/LF in every field: whatever is sent carries no injected
// header. Values that reach a header make the row invalid; the others
// (id, jurisdiction) never reach one.
func TestNoHeaderInjection(t *testing.T) {
	t.Parallel()
	e := setup(t)
	inj := "\r\nBcc: victim@evil.example\r\nX-Injected: yes"
	insertRows(t, e,
		row{id: "all" + inj, email: str("all@x.com" + inj), name: str("Eve" + inj), plan: str("Pro" + inj), juris: str("DE" + inj)},
		row{id: "email" + inj, email: str("email@x.com" + inj)},
		row{id: "name" + inj, email: str("name@x.com"), name: str("Eve" + inj)},
		row{id: "plan" + inj, email: str("plan@x.com"), plan: str("Pro" + inj)},
		row{id: "lf_only" + inj, email: str("lf@x.com"), name: str("Eve\nBcc: victim@evil.example")},
		// Only values that never reach a header carry the line breaks: sent.
		row{id: "id_and_juris" + inj, email: str("ok@x.com"), name: str("Ok"), plan: str("Basic"), juris: str("DE" + inj)},
	)
	s, logs := loggedPass(t, e, e.pol, now)
	if s.Invalid != 5 || s.Sent != 1 {
		t.Fatalf("summary = %+v, want 5 invalid and 1 sent", s)
	}
	// The ids are logged quoted, so that no line break reaches a terminal.
	for id := range invalidLogged(t, logs) {
		if !strings.HasPrefix(id, `"`) || strings.ContainsAny(id, "\r\n") {
			t.Errorf("invalid id logged as %q", id)
		}
	}
	allowed := map[string]bool{"from": true, "to": true, "subject": true, "date": true, "message-id": true, "mime-version": true,
		"x-notice-key": true, "list-unsubscribe": true, "auto-submitted": true, "content-type": true}
	for _, m := range e.smtp.Messages() {
		if len(m.To) != 1 || m.To[0] != "ok@x.com" {
			t.Errorf("envelope recipients %v, want [ok@x.com]", m.To)
		}
		raw := string(m.Raw)
		head, _, ok := strings.Cut(raw, "\r\n\r\n")
		if !ok {
			t.Fatalf("no header/body separator in %q", raw)
		}
		for _, line := range strings.Split(head, "\r\n") {
			if line == "" || line[0] == ' ' || line[0] == '\t' {
				continue // folded continuation
			}
			name, _, ok := strings.Cut(line, ":")
			if !ok || !allowed[strings.ToLower(name)] {
				t.Errorf("unexpected header line %q", line)
			}
		}
		if strings.Contains(strings.ToLower(raw), "evil.example") || strings.Contains(raw, "X-Injected") {
			t.Errorf("the message carries the injected text:\n%s", raw)
		}
		if strings.Count(raw, "\n") != strings.Count(raw, "\r\n") {
			t.Errorf("bare LF in the message")
		}
	}
}
