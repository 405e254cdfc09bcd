package send_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"scan/internal/message"
	"scan/internal/pace"
	"scan/internal/send"
	"scan/internal/send/sendtest"
)

// fakeSender runs fn for every Send.
type fakeSender struct {
	fn func(ctx context.Context, m *send.Message) (send.Receipt, error)
}

func (f fakeSender) Send(ctx context.Context, m *send.Message) (send.Receipt, error) {
	return f.fn(ctx, m)
}
func (fakeSender) Close() error { return nil }

func accept(context.Context, *send.Message) (send.Receipt, error) {
	return send.Receipt{ProviderID: "ok"}, nil
}

func newDispatcher(t testing.TB, ctx context.Context, cfg send.DispatcherConfig) *send.Dispatcher {
	t.Helper()
	if cfg.Renderer == nil {
		cfg.Renderer = newRenderer(t)
	}
	d, err := send.NewDispatcher(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// collect gathers every Result until Results is closed.
func collect(d *send.Dispatcher) <-chan []send.Result {
	out := make(chan []send.Result, 1)
	go func() {
		var rs []send.Result
		for r := range d.Results() {
			rs = append(rs, r)
		}
		out <- rs
	}()
	return out
}

func submitAll(t testing.TB, d *send.Dispatcher, ns []send.Notice) {
	t.Helper()
	for _, n := range ns {
		if err := d.Submit(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
}

func byKey(t *testing.T, submitted []send.Notice, rs []send.Result) map[string]send.Result {
	t.Helper()
	m := map[string]send.Result{}
	for _, r := range rs {
		if _, dup := m[r.Notice.Key]; dup {
			t.Fatalf("two Results for %s", r.Notice.Key[:12])
		}
		m[r.Notice.Key] = r
	}
	for _, n := range submitted {
		if _, ok := m[n.Key]; !ok {
			t.Fatalf("no Result for %s", n.Key[:12])
		}
	}
	if len(rs) != len(submitted) {
		t.Fatalf("%d Results for %d notices", len(rs), len(submitted))
	}
	return m
}

func TestDispatcherOneResultPerNotice(t *testing.T) {
	t.Parallel()
	var calls sync.Map // key -> *atomic.Int32
	sender := fakeSender{fn: func(_ context.Context, m *send.Message) (send.Receipt, error) {
		c, _ := calls.LoadOrStore(m.Notice.Key, new(atomic.Int32))
		n := c.(*atomic.Int32).Add(1)
		switch m.Notice.Revision % 5 {
		case 1:
			return send.Receipt{}, &send.Error{Class: send.Permanent, Code: 550, Err: errors.New("no")}
		case 2:
			return send.Receipt{}, &send.Error{Class: send.Unknown, Err: errors.New("eof")}
		case 3:
			if n == 1 {
				return send.Receipt{}, &send.Error{Class: send.Transient, Code: 451, Err: errors.New("later")}
			}
		case 4:
			return send.Receipt{}, errors.New("untyped")
		}
		return send.Receipt{ProviderID: "id-" + m.Notice.Key[:8]}, nil
	}}
	d := newDispatcher(t, t.Context(), send.DispatcherConfig{
		Sender:      sender,
		Concurrency: 8,
		MaxQueued:   50,
		Retry:       send.RetryPolicy{Backoff: time.Millisecond},
	})
	results := collect(d)
	var ns []send.Notice
	for i := range 500 {
		n := notice(i, fmt.Sprintf("d%d.example", i%20))
		n.Revision = i
		ns = append(ns, n)
	}
	submitAll(t, d, ns)
	d.Close()
	rs := byKey(t, ns, <-results)
	for _, n := range ns {
		r := rs[n.Key]
		want, attempts := send.Class(0), 1
		switch n.Revision % 5 {
		case 1:
			want = send.Permanent
		case 2, 4:
			want = send.Unknown
		case 3:
			attempts = 2
		}
		if got := send.Classify(r.Err); got != want || r.Attempts != attempts {
			t.Fatalf("notice %d: class %v attempts %d (%v), want %v %d", n.Revision, got, r.Attempts, r.Err, want, attempts)
		}
		if r.Err != nil {
			var se *send.Error
			if !errors.As(r.Err, &se) {
				t.Fatalf("Err %v is not an *Error", r.Err)
			}
		} else if r.Receipt.ProviderID != "id-"+n.Key[:8] {
			t.Fatalf("Receipt = %+v", r.Receipt)
		}
		if r.MessageID != message.MessageID(n.Key, "notices.example.com") || r.Done.IsZero() {
			t.Fatalf("Result = %+v", r)
		}
	}
	if err := d.Submit(t.Context(), ns[0]); !errors.Is(err, send.ErrClosed) {
		t.Fatalf("Submit after Close = %v", err)
	}
}

func TestDispatcherCancel(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	release := make(chan struct{})
	var inFlight atomic.Bool
	sender := fakeSender{fn: func(ctx context.Context, m *send.Message) (send.Receipt, error) {
		if inFlight.Swap(true) {
			t.Error("a second notice was sent after cancellation")
		}
		close(started)
		<-release
		if ctx.Err() != nil {
			t.Error("the in-flight send's context was cancelled")
		}
		return send.Receipt{ProviderID: "ok"}, nil
	}}
	if sent, notAttempted := cancelDuringSend(t, sender, started, release); sent != 1 || notAttempted != 5 {
		t.Fatalf("sent %d, not attempted %d; want 1, 5", sent, notAttempted)
	}
}

// cancelDuringSend submits five notices to a dispatcher of concurrency 1
// over sender, cancels the run once sender has started (signalled on
// started) and lets that send end (closing release); then it submits one
// notice more, which is answered at once. It returns how many Results
// were sent and how many not attempted, failing t on any other.
func cancelDuringSend(t *testing.T, sender send.Sender, started <-chan struct{}, release chan struct{}) (sent, notAttempted int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	d := newDispatcher(t, ctx, send.DispatcherConfig{Sender: sender, Concurrency: 1})
	results := collect(d)
	var ns []send.Notice
	for i := range 5 {
		ns = append(ns, notice(i, "example.org"))
	}
	submitAll(t, d, ns)
	<-started
	cancel()
	close(release)
	// Submit still accepts, and answers at once.
	late := notice(99, "example.net")
	if err := d.Submit(context.Background(), late); err != nil {
		t.Fatal(err)
	}
	ns = append(ns, late)
	d.Close()
	for _, r := range byKey(t, ns, <-results) {
		switch {
		case r.Err == nil && r.Attempts == 1:
			sent++
		case errors.Is(r.Err, send.ErrNotAttempted) && send.Classify(r.Err) == send.Transient && r.Attempts == 0:
			notAttempted++
		default:
			t.Errorf("unexpected Result %+v", r)
		}
	}
	return sent, notAttempted
}

func TestDispatcherCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	attempted := make(chan struct{}, 1)
	sender := fakeSender{fn: func(context.Context, *send.Message) (send.Receipt, error) {
		attempted <- struct{}{}
		return send.Receipt{}, &send.Error{Class: send.Transient, Code: 421, Err: errors.New("busy")}
	}}
	ctx, cancel := context.WithCancel(t.Context())
	d := newDispatcher(t, ctx, send.DispatcherConfig{Sender: sender, Retry: send.RetryPolicy{Backoff: time.Hour}})
	results := collect(d)
	submitAll(t, d, []send.Notice{notice(1, "example.org")})
	<-attempted
	cancel()
	d.Close()
	rs := <-results
	if len(rs) != 1 || rs[0].Attempts != 1 || errors.Is(rs[0].Err, send.ErrNotAttempted) || send.Classify(rs[0].Err) != send.Transient {
		t.Fatalf("Results = %+v, want the last Transient error after 1 attempt", rs)
	}
}

func TestDispatcherSubmit(t *testing.T) {
	t.Parallel()
	d := newDispatcher(t, t.Context(), send.DispatcherConfig{Sender: fakeSender{fn: accept}, MaxQueued: 2})
	submitAll(t, d, []send.Notice{notice(1, "a.example"), notice(2, "a.example")})
	// Nobody reads Results: the third notice does not fit.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := d.Submit(ctx, notice(3, "a.example")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Submit beyond MaxQueued = %v", err)
	}
	done, stop := context.WithCancel(t.Context())
	stop()
	if err := d.Submit(done, notice(4, "a.example")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Submit with a cancelled ctx = %v", err)
	}
	d.Close()
	d.Close()
	n := 0
	for range d.Results() {
		n++
	}
	if n != 2 {
		t.Fatalf("%d Results, want 2", n)
	}
}

func TestDispatcherRetry(t *testing.T) {
	t.Parallel()
	transient := &send.Error{Class: send.Transient, Code: 451, Err: errors.New("later")}
	tests := []struct {
		name     string
		fail     int // failures before success; -1: always
		err      error
		class    send.Class
		attempts int
	}{
		{"transient then success", 2, transient, 0, 3},
		{"transient exhausted", -1, transient, send.Transient, 3},
		{"permanent not retried", -1, &send.Error{Class: send.Permanent, Code: 550, Err: errors.New("no")}, send.Permanent, 1},
		{"unknown not retried", -1, &send.Error{Class: send.Unknown, Err: errors.New("eof")}, send.Unknown, 1},
		{"misconfigured not retried", -1, &send.Error{Class: send.Transient, Err: fmt.Errorf("%w: no STARTTLS", send.ErrMisconfigured)}, send.Transient, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			var first atomic.Pointer[send.Message]
			sender := fakeSender{fn: func(_ context.Context, m *send.Message) (send.Receipt, error) {
				first.CompareAndSwap(nil, m)
				if first.Load() != m {
					t.Error("notice rendered again for a retry")
				}
				if n := calls.Add(1); tt.fail < 0 || int(n) <= tt.fail {
					return send.Receipt{}, tt.err
				}
				return send.Receipt{ProviderID: "ok"}, nil
			}}
			d := newDispatcher(t, t.Context(), send.DispatcherConfig{
				Sender: sender,
				Retry:  send.RetryPolicy{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond},
			})
			results := collect(d)
			submitAll(t, d, []send.Notice{notice(1, "example.org")})
			d.Close()
			rs := <-results
			if len(rs) != 1 || send.Classify(rs[0].Err) != tt.class || rs[0].Attempts != tt.attempts {
				t.Fatalf("Results = %+v, want class %v after %d attempts", rs, tt.class, tt.attempts)
			}
		})
	}
}

func TestDispatcherSenderPanic(t *testing.T) {
	t.Parallel()
	sender := fakeSender{fn: func(context.Context, *send.Message) (send.Receipt, error) { panic("boom") }}
	d := newDispatcher(t, t.Context(), send.DispatcherConfig{Sender: sender})
	results := collect(d)
	submitAll(t, d, []send.Notice{notice(1, "example.org")})
	d.Close()
	if rs := <-results; len(rs) != 1 || send.Classify(rs[0].Err) != send.Unknown {
		t.Fatalf("Results = %+v, want one Unknown", rs)
	}
}

func TestDispatcherRenderFailure(t *testing.T) {
	t.Parallel()
	sender := fakeSender{fn: func(context.Context, *send.Message) (send.Receipt, error) {
		t.Error("an unrenderable notice was sent")
		return send.Receipt{}, nil
	}}
	d := newDispatcher(t, t.Context(), send.DispatcherConfig{Sender: sender})
	results := collect(d)
	n := notice(1, "example.org")
	n.Name = "Eve\r\nBcc: x@example.org"
	submitAll(t, d, []send.Notice{n})
	d.Close()
	rs := <-results
	if len(rs) != 1 || send.Classify(rs[0].Err) != send.Permanent || !errors.Is(rs[0].Err, message.ErrHeaderInjection) || rs[0].Attempts != 0 {
		t.Fatalf("Results = %+v", rs)
	}
}

// epoch is where the fake clock starts. It is not the start of a synctest
// bubble (2000-01-01), so a time the dispatcher read from the system clock
// instead of its Clock shows in Result.Started and Done.
var epoch = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)

// runOnClock submits ns in order to a dispatcher built from cfg on a fake
// clock at epoch, closes it, and returns every Result, in completion order.
// It must run in a synctest bubble. The clock moves only when every
// goroutine of the bubble is blocked (synctest.Wait): the dispatcher has
// taken every notice, handed out all that its buckets allow at the current
// instant, and had each answered; it then moves to the earliest timer the
// scheduler armed. Sends take no time on this clock.
func runOnClock(t *testing.T, cfg send.DispatcherConfig, ns []send.Notice) []send.Result {
	t.Helper()
	clk := sendtest.NewClock(epoch)
	cfg.Clock = clk
	var sends atomic.Int32
	cfg.Sender = fakeSender{fn: func(context.Context, *send.Message) (send.Receipt, error) {
		sends.Add(1)
		return send.Receipt{ProviderID: "ok"}, nil
	}}
	d := newDispatcher(t, t.Context(), cfg)
	results := collect(d)
	submitAll(t, d, ns)
	d.Close()
	for {
		synctest.Wait()
		at, ok := clk.Next()
		if !ok {
			break
		}
		clk.Set(at)
	}
	// No timer is armed and nothing can move: the dispatcher is done, or
	// this receive deadlocks the bubble and synctest fails the test.
	rs := <-results
	byKey(t, ns, rs)
	if int(sends.Load()) != len(ns) {
		t.Fatalf("%d sends for %d notices", sends.Load(), len(ns))
	}
	for _, r := range rs {
		if r.Err != nil || r.Attempts != 1 {
			t.Fatalf("%s: %d attempts, %v", r.Notice.Key[:12], r.Attempts, r.Err)
		}
		// Queued at epoch, sent once, answered at once.
		if !r.Done.Equal(r.Started) || r.Waited != r.Started.Sub(epoch) {
			t.Fatalf("%s: Started %v Done %v Waited %v, want Done = Started = epoch+Waited",
				r.Notice.Key[:12], r.Started, r.Done, r.Waited)
		}
	}
	return rs
}

// schedule returns, per domain, the offsets from epoch at which the
// domain's notices were handed out, in that order.
func schedule(rs []send.Result) map[string][]time.Duration {
	out := map[string][]time.Duration{}
	for _, r := range rs {
		out[r.Notice.Domain] = append(out[r.Notice.Domain], r.Started.Sub(epoch))
	}
	for _, ts := range out {
		slices.Sort(ts)
	}
	return out
}

// every returns n offsets from 0, step apart.
func every(n int, step time.Duration) []time.Duration {
	ts := make([]time.Duration, n)
	for i := range ts {
		ts[i] = time.Duration(i) * step
	}
	return ts
}

// A slow domain must not hold back the others, even with only two
// workers: each domain keeps its own pace from the start, so the run ends
// when the slowest domain's pace allows (1s), not after the sum of the
// three (3s).
func TestDispatcherFairness(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var ns []send.Notice
		for i := range 3 {
			ns = append(ns, notice(i, "slow.example"))
		}
		for i := range 6 {
			ns = append(ns, notice(i, "mid.example"))
		}
		for i := range 11 {
			ns = append(ns, notice(i, "fast.example"))
		}
		rs := runOnClock(t, send.DispatcherConfig{
			Concurrency: 2,
			Limits: pace.Limits{
				Default: pace.Bucket{PerSecond: 1000, Burst: 1},
				Domains: map[string]pace.Bucket{
					"slow.example": {PerSecond: 2, Burst: 1},
					"mid.example":  {PerSecond: 5, Burst: 1},
					"FAST.example": {PerSecond: 10, Burst: 1}, // keys match case-insensitively
				},
			},
		}, ns)
		want := map[string][]time.Duration{
			"slow.example": every(3, 500*time.Millisecond),  // 0, .5, 1s
			"mid.example":  every(6, 200*time.Millisecond),  // 0, .2, ... 1s
			"fast.example": every(11, 100*time.Millisecond), // 0, .1, ... 1s
		}
		if got := schedule(rs); !maps.EqualFunc(got, want, slices.Equal) {
			t.Errorf("hand-out offsets per domain:\n got %v\nwant %v", got, want)
		}
		var end time.Duration
		for _, r := range rs {
			end = max(end, r.Done.Sub(epoch))
		}
		if end != time.Second {
			t.Errorf("the run ended at %v, want 1s (the slowest domain's pace; the sum would be 3s)", end)
		}
	})
}

// The global bucket bounds every send, over domains that have no limit of
// their own: two at once (its burst), then one each 50ms (20/s), the
// domains taking their turns in the order their notices came.
func TestDispatcherGlobalCeiling(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var ns []send.Notice
		for i := range 12 {
			ns = append(ns, notice(i, fmt.Sprintf("d%d.example", i))) // unlimited domains
		}
		rs := runOnClock(t, send.DispatcherConfig{
			Concurrency: 8,
			Limits:      pace.Limits{Global: pace.Bucket{PerSecond: 20, Burst: 2}},
		}, ns)
		got := schedule(rs)
		for i, n := range ns {
			want := []time.Duration{max(time.Duration(i-1), 0) * 50 * time.Millisecond}
			if !slices.Equal(got[n.Domain], want) {
				t.Errorf("%s handed out at %v, want %v", n.Domain, got[n.Domain], want)
			}
		}
	})
}

func TestNewDispatcherErrors(t *testing.T) {
	t.Parallel()
	r := newRenderer(t)
	s := fakeSender{fn: accept}
	for name, cfg := range map[string]send.DispatcherConfig{
		"Sender":      {Renderer: r},
		"Renderer":    {Sender: s},
		"Concurrency": {Sender: s, Renderer: r, Concurrency: -1},
		"MaxQueued":   {Sender: s, Renderer: r, MaxQueued: -1},
		"Retry":       {Sender: s, Renderer: r, Retry: send.RetryPolicy{Attempts: -1}},
		"Global":      {Sender: s, Renderer: r, Limits: pace.Limits{Global: pace.Bucket{PerSecond: -1}}},
		"gmail.com":   {Sender: s, Renderer: r, Limits: pace.Limits{Domains: map[string]pace.Bucket{"gmail.com": {Burst: -1}}}},
	} {
		if _, err := send.NewDispatcher(t.Context(), cfg); err == nil || !bytes.Contains([]byte(err.Error()), []byte(name)) {
			t.Errorf("%s: error = %v", name, err)
		}
	}
}

func BenchmarkDispatcher(b *testing.B) {
	benchDispatcher(b, send.DispatcherConfig{Sender: fakeSender{fn: accept}})
}

// benchDispatcher submits notices over 100 domains to a dispatcher built
// from cfg, as fast as it takes them, draining the results.
func benchDispatcher(b *testing.B, cfg send.DispatcherConfig) {
	d := newDispatcher(b, b.Context(), cfg)
	ns := make([]send.Notice, 1000)
	for i := range ns {
		ns[i] = notice(i, fmt.Sprintf("d%d.example", i%100))
	}
	results := make(chan int)
	go func() {
		n := 0
		for range d.Results() {
			n++
		}
		results <- n
	}()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := d.Submit(b.Context(), ns[i%len(ns)]); err != nil {
			b.Fatal(err)
		}
	}
	d.Close()
	<-results
}

// Keep runs in the worker once per notice handed over, however many
// attempts it takes, on the exact bytes sent; a Keep that fails or panics
// keeps nothing and leaves the send's outcome alone.
func TestDispatcherKeep(t *testing.T) {
	t.Parallel()
	transient := &send.Error{Class: send.Transient, Code: 451, Err: errors.New("later")}
	var sendCalls atomic.Int32
	var sent sync.Map // key -> the bytes handed over
	sender := fakeSender{fn: func(_ context.Context, m *send.Message) (send.Receipt, error) {
		sent.Store(m.Notice.Key, m.Raw)
		if sendCalls.Add(1) == 1 {
			return send.Receipt{}, transient
		}
		return send.Receipt{ProviderID: "ok"}, nil
	}}
	var keeps atomic.Int32
	keep := func(raw []byte) ([]byte, error) {
		switch keeps.Add(1) {
		case 2:
			return nil, errors.New("no room")
		case 3:
			panic("boom")
		}
		return append([]byte("kept:"), raw...), nil
	}
	d := newDispatcher(t, t.Context(), send.DispatcherConfig{
		Sender: sender, Keep: keep, Concurrency: 1,
		Retry: send.RetryPolicy{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond},
	})
	results := collect(d)
	submitAll(t, d, []send.Notice{notice(1, "example.org"), notice(2, "example.org"), notice(3, "example.org")})
	d.Close()
	rs := <-results
	if len(rs) != 3 || keeps.Load() != 3 {
		t.Fatalf("%d results, Keep called %d times, want 3 and 3 (once a notice, retries aside)", len(rs), keeps.Load())
	}
	kept := 0
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("%s: %v, want sent (Keep must not change the outcome)", r.Notice.Key, r.Err)
		}
		raw, _ := sent.Load(r.Notice.Key)
		if !bytes.Equal(r.Raw, raw.([]byte)) {
			t.Fatalf("%s: Raw is not the bytes handed over", r.Notice.Key)
		}
		switch {
		case r.Kept == nil:
		case bytes.Equal(r.Kept, append([]byte("kept:"), r.Raw...)):
			kept++
		default:
			t.Fatalf("%s: Kept %q is not Keep's of the bytes handed over", r.Notice.Key, r.Kept)
		}
	}
	if kept != 1 {
		t.Fatalf("%d results kept, want 1 (the other Keeps failed)", kept)
	}
}
