package scan_test

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
	"scan/internal/policy"
	_ "scan/internal/provider/registry" // registers the providers' decoders with reconcile
	"scan/internal/reconcile"
	"scan/internal/scan"
)

var finalPlaceholder = regexp.MustCompile(`\{\{(key|msgid):(\d+)\}\}`)

// applyFinal settles the payloads of provider p's final.txt (its
// documented final failure for {{key:1}}, a delivery for {{key:2}}) for
// the notices of ids[0] and ids[1], as `scan reconcile` would.
func applyFinal(t *testing.T, e *env, p string, ids ...string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "provider", p, "testdata", "final.txt"))
	if err != nil {
		t.Fatal(err)
	}
	filled := finalPlaceholder.ReplaceAllStringFunc(string(b), func(m string) string {
		sub := finalPlaceholder.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		if sub[1] == "key" {
			return keyOf(ids[n-1], 0)
		}
		return msgID(ids[n-1], 0)
	})
	dec := reconcile.DecoderOf(p)
	if dec == nil {
		t.Fatalf("no decoder %q", p)
	}
	var ss []ledger.Settlement
	for i, line := range strings.Split(strings.TrimSpace(filled), "\n") { // one payload a line
		s, err := dec([]byte(line))
		if err != nil {
			t.Fatalf("%s:%d: %v", p, i+1, err)
		}
		ss = append(ss, s)
	}
	settle(t, e.db, ss...)
}

// Issue 36, per provider: a soft bounce (or block) the provider documents
// as final, from its documented example, leaves the email sent
// (accepted) but undeliverable; over the next pass the notice goes by sms,
// once, with its own key; the delivered notice is never texted, and
// neither is mailed again.
func TestUndeliverableGoesBySMS(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"ses", "sendgrid", "mailgun", "postmark"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			e, tw, c := smsSetup(t)
			e.insert(sub{id: "final", email: "full@x.com", renewsIn: 48 * time.Hour},
				sub{id: "delivered", email: "ok@x.com", renewsIn: 48 * time.Hour})
			e.setPhone("final", "+14155550111")
			e.setPhone("delivered", "+14155550112")
			at := func(d time.Duration) passOpt { return func(cfg *scan.Config) { cfg.SMS, cfg.Now = c, now.Add(d) } }
			if s := e.mustPass(at(0)); s.Sent != 2 || s.SMS != 0 {
				t.Fatalf("first pass %+v", s)
			}
			applyFinal(t, e, p, "final", "delivered")
			if r := rowsOf(t, e.db, "final")["email"]; r.Delivery != ledger.DeliveryUndeliverable {
				t.Fatalf("final email row: %s, delivery %q (%s)", r.State, r.Delivery, r.DeliveryKind)
			}
			if r := rowsOf(t, e.db, "delivered")["email"]; r.State != ledger.Sent || r.Delivery != ledger.DeliveryDelivered {
				t.Fatalf("delivered email row: %s, delivery %q", r.State, r.Delivery)
			}
			if s := e.mustPass(at(time.Hour)); s.SMS != 1 || e.smtp.Total() != 2 {
				t.Fatalf("second pass %+v", s)
			}
			if s := e.mustPass(at(2 * time.Hour)); s.SMS != 0 || s.Sent != 0 || s.Minted != 0 {
				t.Fatalf("third pass %+v", s)
			}
			if tw.To("+14155550111") != 1 || tw.To("+14155550112") != 0 || len(tw.Requests()) != 1 {
				t.Fatalf("twilio got %+v", tw.Requests())
			}
			if r := rowsOf(t, e.db, "final")["sms"]; r.State != ledger.Sent || r.NoticeKey != smsKeyOf("final") || r.Attempts != 1 {
				t.Fatalf("sms row %+v", r)
			}
			if e.smtp.Total() != 2 {
				t.Fatalf("SMTP got %d, want 2", e.smtp.Total())
			}
		})
	}
}

// Issue 36, confirm_within: 2h. An email with no delivery event 2h after
// it was sent is texted once by the next pass (not by one before the 2h);
// its late Delivery changes nothing more; a notice confirmed within the
// 2h is never texted.
func TestConfirmWithin(t *testing.T) {
	t.Parallel()
	e, tw, c := smsSetup(t)
	pol, err := policy.Parse(strings.NewReader(strings.Replace(smsPolicy, "channels: [email, sms]", "channels: [email, sms]\n    confirm_within: 2h", 1) + "provider: ses\n"))
	if err != nil {
		t.Fatal(err)
	}
	e.pol = pol
	e.insert(sub{id: "silent", email: "s@x.com", renewsIn: 48 * time.Hour},
		sub{id: "confirmed", email: "c@x.com", renewsIn: 48 * time.Hour})
	e.setPhone("silent", "+14155550121")
	e.setPhone("confirmed", "+14155550122")
	at := func(d time.Duration) passOpt { return func(cfg *scan.Config) { cfg.SMS, cfg.Now = c, now.Add(d) } }
	delivered := func(id string, d time.Duration) ledger.Settlement {
		return ledger.Settlement{Key: keyOf(id, 0), To: ledger.Sent, Kind: ledger.KindDelivered, Event: "ses:delivery", At: now.Add(d)}
	}
	if s := e.mustPass(at(0)); s.Sent != 2 || s.SMS != 0 {
		t.Fatalf("first pass %+v", s)
	}
	settle(t, e.db, delivered("confirmed", 90*time.Minute))
	if s := e.mustPass(at(time.Hour + 59*time.Minute)); s.SMS != 0 {
		t.Fatalf("pass before 2h: %+v", s)
	}
	if s := e.mustPass(at(2 * time.Hour)); s.SMS != 1 {
		t.Fatalf("pass at 2h: %+v", s)
	}
	settle(t, e.db, delivered("silent", 150*time.Minute)) // late
	if r := rowsOf(t, e.db, "silent")["email"]; r.Delivery != ledger.DeliveryDelivered {
		t.Fatalf("silent email after its late delivery: %q", r.Delivery)
	}
	if s := e.mustPass(at(3 * time.Hour)); s.SMS != 0 || s.Sent != 0 {
		t.Fatalf("pass after the late delivery: %+v", s)
	}
	if tw.To("+14155550121") != 1 || tw.To("+14155550122") != 0 || len(tw.Requests()) != 1 || e.smtp.Total() != 2 {
		t.Fatalf("twilio got %+v, SMTP %d", tw.Requests(), e.smtp.Total())
	}
	un, err := ledger.Undelivered(context.Background(), e.db, now.Add(-time.Hour), now.Add(3*time.Hour), 100)
	if err != nil || len(un) != 0 {
		t.Fatalf("undelivered %+v, %v", un, err)
	}
}
