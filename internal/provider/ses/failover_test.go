package ses_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"scan/internal/send"
	"scan/internal/smtptest"
)

// The failover sender is internal/send's; its tests live here because
// SCAN_SENDER=ses,smtp is the list an operator writes, and the SES
// stand-in is this package's.

// failoverPair is an SES stand-in answering with handler in front of a
// real SMTP server, as SCAN_SENDER=ses,smtp builds them.
func failoverPair(t *testing.T, handler func(http.ResponseWriter, *http.Request), timeout time.Duration) (*send.Failover, *fakeSES, *smtptest.Server) {
	t.Helper()
	f := newFakeSES(t, handler)
	srv := smtptest.New(t)
	smtpSender, err := send.NewSMTP(send.SMTPConfig{URL: srv.URL(), Pool: 1})
	if err != nil {
		t.Fatal(err)
	}
	fo, err := send.NewFailover(send.FailoverConfig{Senders: []send.Named{
		{Name: "ses", Sender: newSES(t, f.srv.URL, timeout)},
		{Name: "smtp", Sender: smtpSender},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fo.Close() })
	return fo, f, srv
}

// An account SES has paused refuses every message: the first message goes
// through SMTP at once, and SES is never asked again.
func TestFailoverOnPausedAccount(t *testing.T) {
	t.Parallel()
	fo, f, srv := failoverPair(t, sesError(400, "SendingPausedException", "sending paused"), 10*time.Second)
	r := newRenderer(t)
	for i := 1; i <= 3; i++ {
		m := render(t, r, notice(i, "example.org"))
		rec, err := fo.Send(t.Context(), m)
		if err != nil {
			t.Fatalf("notice %d: %v", i, err)
		}
		if rec.Sender != "smtp" {
			t.Errorf("notice %d taken by %q, want smtp", i, rec.Sender)
		}
		if srv.Count(m.MessageID) != 1 {
			t.Errorf("notice %d reached SMTP %d times", i, srv.Count(m.MessageID))
		}
	}
	if n := f.n.Load(); n != 1 {
		t.Errorf("SES asked %d times, want 1 (given up after the refusal)", n)
	}
	if fo.Current() != "smtp" {
		t.Errorf("current %q", fo.Current())
	}
	if !fo.Later("smtp") || fo.Later("ses") {
		t.Errorf("Later: smtp %v, ses %v", fo.Later("smtp"), fo.Later("ses"))
	}
}

// A service that answers 503 every time: the message stays with SES for
// FailAfter failures in a row (each Transient, which the dispatcher
// retries), then goes through SMTP; SMTP gets it once.
func TestFailoverOnUnavailableService(t *testing.T) {
	t.Parallel()
	fo, f, srv := failoverPair(t, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}, 10*time.Second)
	m := render(t, newRenderer(t), notice(1, "example.org"))
	for try := 1; try < send.DefaultFailAfter; try++ {
		_, err := fo.Send(t.Context(), m)
		if send.Classify(err) != send.Transient || send.SenderOf(err) != "ses" {
			t.Fatalf("try %d: class %s from %q: %v", try, send.Classify(err), send.SenderOf(err), err)
		}
		// SMTP is still to come: the pass must not stop on this failure.
		if !fo.CanMoveOn(err) {
			t.Fatalf("try %d: CanMoveOn false for SES's %v", try, err)
		}
	}
	rec, err := fo.Send(t.Context(), m)
	if err != nil || rec.Sender != "smtp" {
		t.Fatalf("after %d failures: %+v, %v", send.DefaultFailAfter, rec, err)
	}
	if srv.Count(m.MessageID) != 1 || int(f.n.Load()) != send.DefaultFailAfter {
		t.Errorf("smtp got %d, ses asked %d times", srv.Count(m.MessageID), f.n.Load())
	}
}

// A request SES takes and never answers may have been accepted: the
// outcome is Unknown, the claim stays in quarantine, and SMTP never gets
// the message, however often it happens.
func TestFailoverNeverMovesAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	fo, _, srv := failoverPair(t, func(http.ResponseWriter, *http.Request) { <-release }, 200*time.Millisecond)
	t.Cleanup(func() { close(release) })
	r := newRenderer(t)
	for i := 1; i <= send.DefaultFailAfter+1; i++ {
		_, err := fo.Send(t.Context(), render(t, r, notice(i, "example.org")))
		if send.Classify(err) != send.Unknown {
			t.Fatalf("notice %d: class %s: %v", i, send.Classify(err), err)
		}
	}
	if srv.Total() != 0 || fo.Current() != "ses" {
		t.Errorf("SMTP got %d messages; current %q", srv.Total(), fo.Current())
	}
}

// A refusal of the recipient is not the sender's failure: it is returned
// as it is and the next message still goes to SES.
func TestFailoverKeepsAPermanentRefusal(t *testing.T) {
	t.Parallel()
	fo, f, srv := failoverPair(t, sesError(400, "MessageRejected", "Email address is not verified."), 10*time.Second)
	r := newRenderer(t)
	for i := 1; i <= send.DefaultFailAfter+1; i++ {
		_, err := fo.Send(t.Context(), render(t, r, notice(i, "example.org")))
		if send.Classify(err) != send.Permanent {
			t.Fatalf("notice %d: class %s: %v", i, send.Classify(err), err)
		}
	}
	if srv.Total() != 0 || int(f.n.Load()) != send.DefaultFailAfter+1 {
		t.Errorf("SMTP got %d; SES asked %d times", srv.Total(), f.n.Load())
	}
}

// The last sender's failure leaves nowhere to move to: the pass may stop.
func TestFailoverCannotMoveOnFromTheLast(t *testing.T) {
	t.Parallel()
	fo, _, srv := failoverPair(t, sesError(400, "SendingPausedException", "sending paused"), 10*time.Second)
	srv.SetMode(smtptest.TempFailRcpt)
	_, err := fo.Send(t.Context(), render(t, newRenderer(t), notice(1, "example.org")))
	if err == nil || send.SenderOf(err) != "smtp" {
		t.Fatalf("err %v from %q, want smtp's", err, send.SenderOf(err))
	}
	if fo.CanMoveOn(err) || fo.CanMoveOn(errors.New("not through the failover")) {
		t.Errorf("CanMoveOn true after the last sender failed")
	}
}

func TestNewFailoverErrors(t *testing.T) {
	t.Parallel()
	if _, err := send.NewFailover(send.FailoverConfig{}); err == nil {
		t.Error("no senders accepted")
	}
	if _, err := send.NewFailover(send.FailoverConfig{Senders: []send.Named{{Name: "smtp"}}}); err == nil {
		t.Error("a nil sender accepted")
	}
}
