package ask_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"scan/internal/ask"
	"scan/internal/provider/mailgun"
	"scan/internal/provider/sendgrid"
)

func about(p ask.Provider) error {
	_, err := p.About(context.Background(), ask.Claim{Key: key(1), MessageID: msgID(1), Attempt: 1, ClaimedAt: now.Add(-time.Hour)}, now)
	return err
}

// 429 and 5xx answers are tried again, after the Retry-After they name
// (here 0 seconds) or the backoff; a success ends it.
func TestClientRetries429And5xx(t *testing.T) {
	t.Parallel()
	srv := newStandIn(t, "mailgun", nil)
	var n atomic.Int32
	srv.fail = func(*http.Request) (int, string) {
		switch n.Add(1) {
		case 1:
			return http.StatusTooManyRequests, "0"
		case 2:
			return http.StatusServiceUnavailable, ""
		}
		return 0, ""
	}
	p, err := mailgun.NewAsker("key-1", "n.example.com", fast(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if err := about(p); err != nil {
		t.Fatal(err)
	}
	if got := srv.requests.Load(); got != 3 {
		t.Errorf("%d requests, want 3 (429, 503, 200)", got)
	}
}

// Retries are bounded: the last answer's status comes back as a
// *StatusError; a 4xx other than 429 is never retried; a Retry-After
// longer than MaxRetryAfter is not waited for.
func TestClientGivesUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status     int
		retryAfter string
		requests   int32
	}{
		{http.StatusInternalServerError, "", 3},
		{http.StatusBadRequest, "", 1},
		{http.StatusTooManyRequests, "3600", 1},
		{http.StatusTooManyRequests, "Wed, 21 Oct 2099 07:28:00 GMT", 1},
	} {
		srv := newStandIn(t, "mailgun", nil)
		srv.fail = func(*http.Request) (int, string) { return tc.status, tc.retryAfter }
		cfg := fast(srv.URL)
		cfg.Retries = 2
		p, err := mailgun.NewAsker("key-1", "n.example.com", cfg)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = about(p)
		var se *ask.StatusError
		if !errors.As(err, &se) || se.Status != tc.status || srv.requests.Load() != tc.requests {
			t.Errorf("%d %q: err %v after %d requests; want HTTP %d after %d", tc.status, tc.retryAfter, err, srv.requests.Load(), tc.status, tc.requests)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%d %q: gave up after %v", tc.status, tc.retryAfter, d)
		}
	}
}

// A cancelled context ends a request waiting for its retry.
func TestClientStopsOnCancel(t *testing.T) {
	t.Parallel()
	srv := newStandIn(t, "mailgun", nil)
	ctx, cancel := context.WithCancel(context.Background())
	srv.fail = func(*http.Request) (int, string) {
		cancel()
		return http.StatusServiceUnavailable, "60"
	}
	p, err := mailgun.NewAsker("key-1", "n.example.com", fast(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.About(ctx, ask.Claim{Key: key(1), MessageID: msgID(1), Attempt: 1, ClaimedAt: now.Add(-time.Hour)}, now)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// A request that outlasts ClientConfig.Timeout fails (and is retried).
func TestClientTimesOutARequest(t *testing.T) {
	t.Parallel()
	srv := newStandIn(t, "mailgun", nil)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv.fail = func(r *http.Request) (int, string) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return http.StatusServiceUnavailable, ""
	}
	cfg := fast(srv.URL)
	cfg.Timeout, cfg.Retries = 50*time.Millisecond, 1
	p, err := mailgun.NewAsker("key-1", "n.example.com", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := about(p); !errors.Is(err, context.DeadlineExceeded) || srv.requests.Load() != 2 {
		t.Errorf("err = %v after %d requests; want a deadline after 2", err, srv.requests.Load())
	}
}

// SendGrid's 403 on Email Logs says the account (or key) lacks it, as
// ErrUnsupported.
func TestSendGridWithoutEmailLogs(t *testing.T) {
	t.Parallel()
	srv := newStandIn(t, "sendgrid", nil)
	srv.fail = func(*http.Request) (int, string) { return http.StatusForbidden, "" }
	p, err := sendgrid.NewAsker("SG.key", fast(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if err := about(p); !errors.Is(err, ask.ErrUnsupported) || !errors.Is(err, sendgrid.ErrNoEmailLogs) {
		t.Errorf("err = %v, want ErrNoEmailLogs", err)
	}
}
