package main

import (
	"strings"
	"testing"
)

// A bad address is known the first night (issue 36): a malformed email
// with no other channel (the test policy's kinds are email-only) is
// listed by `scan undelivered` with reason invalid_address while its
// window is open, without the address; once the address is fixed in the
// subscriptions table the next pass sends it, once, and a further pass
// sends nothing.
func TestInvalidAddressListedThenSentOnceFixed(t *testing.T) {
	t.Parallel()
	const n = 3
	f := newFixture(t, n, "")
	if _, err := f.db.Exec(`UPDATE subscriptions SET email = 'user.example.com' WHERE id = $1`, subID(1)); err != nil {
		t.Fatal(err)
	}
	s := f.mustRun(f.env())
	if s.InvalidAddress != 1 || s.Sent != n-1 || s.Minted != n-1 || f.smtp.Total() != n-1 {
		t.Fatalf("first pass: summary %+v, SMTP got %d", s, f.smtp.Total())
	}
	undelivered := func() []map[string]any {
		t.Helper()
		code, out, errOut := f.runIn(nil, "undelivered", "-o", "json")
		if code != 0 {
			t.Fatalf("undelivered: exit %d: %s", code, errOut)
		}
		if strings.Contains(out, "example.com") {
			t.Errorf("undelivered shows an address: %s", out)
		}
		if strings.TrimSpace(out) == "" {
			return nil
		}
		return jsonObjects(t, "undelivered", out)
	}
	rows := undelivered()
	if len(rows) != 1 || rows[0]["reason"] != "invalid_address" || rows[0]["subscription_id"] != subID(1) {
		t.Fatalf("undelivered while the window is open: %v", rows)
	}
	// Still malformed: it stays, nothing is sent, nothing new is recorded.
	s = f.mustRun(f.env())
	if s.Sent != 0 || s.InvalidAddress != 0 || f.smtp.Total() != n-1 || len(undelivered()) != 1 {
		t.Fatalf("second pass, still malformed: summary %+v, SMTP got %d", s, f.smtp.Total())
	}
	if _, err := f.db.Exec(`UPDATE subscriptions SET email = 'fixed@example.com' WHERE id = $1`, subID(1)); err != nil {
		t.Fatal(err)
	}
	s = f.mustRun(f.env())
	if s.Sent != 1 || s.Retried != 1 || f.smtp.Total() != n {
		t.Fatalf("pass after the fix: summary %+v, SMTP got %d", s, f.smtp.Total())
	}
	if rows := undelivered(); len(rows) != 0 {
		t.Fatalf("undelivered after the fix: %v", rows)
	}
	s = f.mustRun(f.env())
	if s.Sent != 0 || f.smtp.Total() != n {
		t.Fatalf("a further pass: summary %+v, SMTP got %d", s, f.smtp.Total())
	}
	var state string
	if err := f.db.Get(&state, `SELECT state FROM notice_ledger WHERE subscription_id = $1`, subID(1)); err != nil || state != "sent" {
		t.Fatalf("row %q (%v), want sent", state, err)
	}
}

// A kind with an sms channel: a malformed email and no phone leave no
// channel, so the notice is invalid_address too (no sms row, nothing
// texted), and is emailed once the address is fixed.
func TestInvalidAddressWithoutPhone(t *testing.T) {
	t.Parallel()
	f, tw, env := smsFixtureOf(t, "[email, sms]", "email = 'user.example.com', ")
	if _, err := f.db.Exec(`UPDATE subscriptions SET phone = NULL WHERE id = $1`, subID(1)); err != nil {
		t.Fatal(err)
	}
	s := f.mustRun(f.env(env...))
	if s.InvalidAddress != 1 || s.SMS != smsNotices-1 || f.smtp.Total() != 0 || tw.To("+14155550001") != 0 {
		t.Fatalf("first pass: summary %+v, SMTP got %d", s, f.smtp.Total())
	}
	code, out, errOut := f.runIn(nil, "undelivered", "-o", "json")
	if code != 0 || strings.Contains(out, "example.com") {
		t.Fatalf("undelivered: exit %d %s %s", code, out, errOut)
	}
	var listed []map[string]any
	if strings.TrimSpace(out) != "" {
		listed = jsonObjects(t, "undelivered", out)
	}
	if len(listed) != 1 || listed[0]["reason"] != "invalid_address" || listed[0]["subscription_id"] != subID(1) {
		t.Fatalf("undelivered: %v", listed)
	}
	if _, err := f.db.Exec(`UPDATE subscriptions SET email = 'fixed@example.com' WHERE id = $1`, subID(1)); err != nil {
		t.Fatal(err)
	}
	for pass := 0; pass < 2; pass++ {
		s = f.mustRun(f.env(env...))
		if f.smtp.Total() != 1 || tw.To("+14155550001") != 0 {
			t.Fatalf("pass %d after the fix: summary %+v, SMTP got %d", pass, s, f.smtp.Total())
		}
	}
}
