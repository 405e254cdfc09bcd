package scan_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/scan"
	"scan/internal/send"
	"scan/internal/smtptest"
)

// gatedSMS is an sms sender that says when it is first called (entered)
// and answers only once released.
type gatedSMS struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}
	n       atomic.Int64
}

func (g *gatedSMS) Send(ctx context.Context, _ *notice.Message) (send.Receipt, error) {
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.release:
	case <-ctx.Done():
		return send.Receipt{}, ctx.Err()
	}
	return send.Receipt{ProviderID: fmt.Sprintf("SM%032d", g.n.Add(1))}, nil
}

func (g *gatedSMS) Close() error { return nil }

// No head-of-line blocking between channels: in one pass, the sms stage
// runs beside the email stage and neither waits for the other. The SMTP
// server answers no message before the sms sender has been called (an sms
// stage that waited for the email stage never is), and the sms sender
// answers nothing before every email notice of the pass is recorded sent
// (an email stage that waited for the sms bucket never is). Either way
// round, the test's deadline is what fails it.
func TestSMSDoesNotBlockEmail(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := &gatedSMS{entered: make(chan struct{}), release: make(chan struct{})}
	gate := smtptest.WithReply(func(smtptest.Received) string {
		select {
		case <-g.entered:
		case <-ctx.Done():
		}
		return "ok"
	})
	e := setup(t, gate)
	pol, err := policy.Parse(strings.NewReader(smsPolicy))
	if err != nil {
		t.Fatal(err)
	}
	e.pol = pol
	const mailed, texted = 20, 5
	var subs []sub
	for i := range mailed {
		subs = append(subs, sub{id: fmt.Sprintf("m%02d", i), email: fmt.Sprintf("u%d@x.com", i), renewsIn: 48 * time.Hour})
	}
	for i := range texted {
		subs = append(subs, sub{id: fmt.Sprintf("t%02d", i), email: "", renewsIn: 48 * time.Hour})
	}
	e.insert(subs...)
	for i := range texted {
		e.setPhone(fmt.Sprintf("t%02d", i), fmt.Sprintf("+1415555%04d", i))
	}
	emailDone := make(chan struct{})
	var sent atomic.Int64
	hooks := scan.Hooks{Outcome: func(st ledger.State, _ string, _, _, _ time.Duration) {
		if st == ledger.Sent && sent.Add(1) == mailed {
			close(emailDone)
		}
	}}
	type result struct {
		s   scan.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := e.pass(ctx, func(cfg *scan.Config) { cfg.SMS, cfg.Hooks = g, hooks })
		done <- result{s, err}
	}()
	select {
	case <-emailDone:
	case <-ctx.Done():
		t.Fatalf("the email notices were not all sent while the sms sender held its first request (%d of %d; sms sender called by then: %v)",
			sent.Load(), mailed, isClosed(g.entered))
	}
	close(g.release)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.s.Sent != mailed+texted || r.s.SMS != texted || g.n.Load() != texted {
		t.Fatalf("summary %+v, sms sent %d", r.s, g.n.Load())
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A kind that goes by sms only (channels: [sms], India's pre-debit
// notices): the sms stage is its primary stage. A row with a phone is
// texted once under the sms key, whatever its email, and never mailed; a
// row with no usable phone is recorded failed no_usable_address; a row
// whose window closed unsent is recorded missed on the sms channel; a
// second pass sends nothing.
func TestSMSOnlyKind(t *testing.T) {
	t.Parallel()
	e, tw, c := smsSetup(t)
	e.pol = mustPolicy(t, strings.Replace(smsPolicy, "channels: [email, sms]", "channels: [sms]", 1))
	e.insert(
		sub{id: "texted", email: "ok@x.com", renewsIn: 48 * time.Hour},
		sub{id: "nophone", email: "ok2@x.com", renewsIn: 48 * time.Hour},
		sub{id: "closed", email: "ok3@x.com", renewsIn: 12 * time.Hour},
	)
	e.setPhone("texted", "+14155550111")
	e.setPhone("closed", "+14155550112")
	withSMS := func(cfg *scan.Config) { cfg.SMS = c }
	s := e.mustPass(withSMS)
	if s.SMS != 1 || s.Sent != 1 || s.NoUsableAddress != 1 || s.Missed != 1 {
		t.Fatalf("first pass %+v", s)
	}
	if tw.To("+14155550111") != 1 || tw.To("+14155550112") != 0 || e.smtp.Total() != 0 {
		t.Fatalf("twilio got %+v, SMTP %d", tw.Requests(), e.smtp.Total())
	}
	r := rowsOf(t, e.db, "texted")
	if len(r) != 1 || r["sms"].State != ledger.Sent || r["sms"].NoticeKey != smsKeyOf("texted") {
		t.Fatalf("texted rows %+v", r)
	}
	if r := rowsOf(t, e.db, "nophone"); len(r) != 1 || r["sms"].State != ledger.Failed || *r["sms"].LastError != ledger.ReasonNoAddress {
		t.Fatalf("nophone rows %+v", r)
	}
	if r := rowsOf(t, e.db, "closed"); len(r) != 1 || r["sms"].State != ledger.Missed || r["sms"].NoticeKey != smsKeyOf("closed") {
		t.Fatalf("closed rows %+v", r)
	}
	s = e.mustPass(withSMS)
	if s.SMS != 0 || s.Minted != 0 || s.Missed != 0 || len(tw.Requests()) != 1 || e.smtp.Total() != 0 {
		t.Fatalf("second pass %+v, twilio %d", s, len(tw.Requests()))
	}
}

// The dry run counts what would go by sms: the row with no email but a
// phone, not the row mailed, not the number on the sms suppression list;
// the row with neither is counted apart. It writes nothing, and the pass
// that follows texts what it counted.
func TestSMSDryRun(t *testing.T) {
	t.Parallel()
	e, tw, c := smsSetup(t)
	e.insert(
		sub{id: "mailed", email: "ok@x.com", renewsIn: 48 * time.Hour},
		sub{id: "texted", email: "", renewsIn: 48 * time.Hour},
		sub{id: "stopped", email: "", renewsIn: 48 * time.Hour},
		sub{id: "nobody", email: "", renewsIn: 48 * time.Hour},
	)
	e.setPhone("mailed", "+14155550121")
	e.setPhone("texted", "+14155550122")
	e.setPhone("stopped", "+14155550123")
	h, _ := notice.NewAddressHasher([]byte(secret))
	if _, err := ledger.SuppressionAdd(context.Background(), e.db, now, []ledger.Suppression{{Channel: "sms",
		Digest: h.Digest("sms", "+14155550123"), Reason: "test", Source: ledger.SuppressedByOperator}}); err != nil {
		t.Fatal(err)
	}
	d := dryRun(t, e, c)
	if d.WouldSMS != 1 || d.WouldSMSUnreached != 1 || d.WouldMint != 1 {
		t.Fatalf("dry run %+v", d)
	}
	var n int
	if err := e.db.Get(&n, `SELECT count(*) FROM notice_ledger`); err != nil || n != 0 || len(tw.Requests()) != 0 {
		t.Fatalf("the dry run wrote %d rows, sent %d sms (%v)", n, len(tw.Requests()), err)
	}
	// --max-mint counts the new sms keys too: one email and one sms.
	one, two := 1, 2
	if _, err := e.pass(context.Background(), func(cfg *scan.Config) { cfg.SMS, cfg.MaxMint = c, &one }); !errors.Is(err, scan.ErrMaxMint) {
		t.Fatalf("max-mint 1: %v, want ErrMaxMint", err)
	}
	s := e.mustPass(func(cfg *scan.Config) { cfg.SMS, cfg.MaxMint = c, &two })
	if s.SMS != d.WouldSMS || tw.To("+14155550122") != 1 || len(tw.Requests()) != 1 {
		t.Fatalf("pass %+v after dry run %+v; twilio %+v", s, d, tw.Requests())
	}
}

// A time budget that has ended defers the sms notices (counted), claims
// none of them, and the next pass texts them once.
func TestSMSDeferredByTheBudget(t *testing.T) {
	t.Parallel()
	e, tw, c := smsSetup(t)
	e.insert(sub{id: "a", email: "", renewsIn: 48 * time.Hour}, sub{id: "b", email: "", renewsIn: 48 * time.Hour})
	e.setPhone("a", "+14155550131")
	e.setPhone("b", "+14155550132")
	s := e.mustPass(func(cfg *scan.Config) { cfg.SMS, cfg.MaxDuration = c, time.Nanosecond })
	if s.SMS != 0 || s.Deferred < 2 || len(tw.Requests()) != 0 {
		t.Fatalf("pass past its budget %+v, twilio %d", s, len(tw.Requests()))
	}
	if r := rowsOf(t, e.db, "a")["sms"]; r.NoticeKey != "" {
		t.Fatalf("a deferred notice was claimed: %+v", r)
	}
	s = e.mustPass(func(cfg *scan.Config) { cfg.SMS = c })
	if s.SMS != 2 || tw.To("+14155550131") != 1 || tw.To("+14155550132") != 1 {
		t.Fatalf("next pass %+v, twilio %+v", s, tw.Requests())
	}
}

// An email refused for good (550) is texted in the same pass: the email
// stage hands the refused notices to the sms stage as their outcomes
// commit.
func TestSMSAfterARefusalInTheSamePass(t *testing.T) {
	t.Parallel()
	e, tw, c := smsSetup(t)
	e.smtp.SetMode(smtptest.PermFailRcpt)
	e.insert(sub{id: "r1", email: "a@x.com", renewsIn: 48 * time.Hour}, sub{id: "r2", email: "b@x.com", renewsIn: 48 * time.Hour})
	e.setPhone("r1", "+14155550141")
	e.setPhone("r2", "+14155550142")
	s := e.mustPass(func(cfg *scan.Config) { cfg.SMS = c })
	if s.Failed != 2 || s.SMS != 2 || tw.To("+14155550141") != 1 || tw.To("+14155550142") != 1 {
		t.Fatalf("pass %+v, twilio %+v", s, tw.Requests())
	}
	if r := rowsOf(t, e.db, "r1"); r["email"].State != ledger.Failed || r["sms"].State != ledger.Sent {
		t.Fatalf("r1 rows %+v", r)
	}
}
