package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// SubscriptionSeedChannels inserts $1 due subscriptions with an address
// at mail.example and, when $2, as many more with no email but a phone:
// the sms half.
const SubscriptionSeedChannels = `
INSERT INTO subscriptions (id, email, phone, status, renews_at, period_start, notice_revision)
SELECT h.half || lpad(g::text, 7, '0'),
       CASE h.half WHEN 'e' THEN 'user' || g || '@mail.example' END,
       CASE h.half WHEN 's' THEN '+1415' || lpad(g::text, 7, '0') END, 'active',
       $3::timestamptz + interval '25 hours' + (g % 2820) * interval '1 minute',
       ($3::timestamptz + interval '25 hours' + (g % 2820) * interval '1 minute')::date, 0
FROM (VALUES ('e'), ('s')) AS h(half)
CROSS JOIN generate_series(1, $1::int) g
WHERE h.half = 'e' OR $2::bool`

// The channels scenario: the email half at channelsEmailRate, the sms
// half at channelsSMSRate (a few Twilio long codes).
const (
	channelsEmailRate = 100
	channelsSMSRate   = 20
	channelsAccount   = "AC00000000000000000000000000000000"
)

func policyChannels() string {
	return `schedule: "0 2 * * *"
message_id_domain: notices.example.com
from: "Example Box <notices@example.com>"
notices:
  - kind: renewal_notice_t72
    open_before: 72h
    close_before: 24h
    channels: [email, sms]
rate:
  default: {per_second: 10000, burst: 1000}
  global: {per_second: 100000, burst: 1000}
  domains:
    mail.example: {per_second: ` + fmt.Sprint(channelsEmailRate) + `, burst: 20}
  sms: {per_second: ` + fmt.Sprint(channelsSMSRate) + `, burst: 1}
concurrency: 16
`
}

// twilioSink answers the Messages API's create as Twilio documents it
// (201 and the Message resource,
// https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource)
// at once, and keeps the count and the time of the last one.
type twilioSink struct {
	mu   sync.Mutex
	n    int
	last time.Time
}

func (t *twilioSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	_ = r.ParseForm()
	t.mu.Lock()
	t.n++
	sid := fmt.Sprintf("SM%032x", t.n)
	t.last = time.Now()
	t.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"sid": sid, "account_sid": channelsAccount, "to": r.PostForm.Get("To"),
		"from": r.PostForm.Get("From"), "status": "queued", "num_segments": "1", "api_version": "2010-04-01"})
}

func (t *twilioSink) serve() (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: t, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// channelsRun is one pass of the channels scenario.
type channelsRun struct {
	emailTook, smsTook time.Duration
	sms                int
	r                  result
}

// channels runs the first pass over n email notices alone, then over the
// same n with n more that can go by sms only, and reports the email
// half's finish time and throughput in both, and the sms half's rate
// against its bucket: with no head-of-line blocking, the sms half does
// not slow the email half down.
func (b *bench) channels(ctx context.Context) error {
	n := b.cfg.channelsN
	policy, err := b.writePolicy("channels.yaml", policyChannels())
	if err != nil {
		return err
	}
	runs := map[bool]channelsRun{}
	for _, withSMS := range []bool{false, true} {
		cr, err := b.channelsPass(ctx, policy, n, withSMS)
		if err != nil {
			return err
		}
		runs[withSMS] = cr
	}
	alone, both := runs[false], runs[true]
	emailIdeal := float64(n) / channelsEmailRate
	smsIdeal := float64(n-1) / channelsSMSRate
	b.add(figure{fmt.Sprintf("channels: %d email notices at %d/s beside %d sms-only ones at rate.sms %d/s, one pass", n, channelsEmailRate, n, channelsSMSRate),
		fmt.Sprintf("email half done in %.2f s (%.0f/s); sms %d in %.2f s (%.1f/s)", both.emailTook.Seconds(), float64(n)/both.emailTook.Seconds(),
			both.sms, both.smsTook.Seconds(), float64(both.sms)/both.smsTook.Seconds()),
		fmt.Sprintf("email alone done in %.2f s (%.0f/s); ideal %.2f s email, %.2f s sms", alone.emailTook.Seconds(), float64(n)/alone.emailTook.Seconds(), emailIdeal, smsIdeal),
		fmt.Sprintf("email %.2fx alone; sms at %.0f%% of its bucket", both.emailTook.Seconds()/alone.emailTook.Seconds(), 100*float64(both.sms)/both.smsTook.Seconds()/channelsSMSRate),
		"email within 1.25x of alone; sms at its bucket"})
	return nil
}

// channelsPass seeds a database (with or without the sms half) and runs
// one pass through an SMTP sink and a Twilio stand-in.
func (b *bench) channelsPass(ctx context.Context, policy string, n int, withSMS bool) (channelsRun, error) {
	name := map[bool]string{false: "bench_channels_email", true: "bench_channels_both"}[withSMS]
	db, err := b.database(ctx, name)
	if err != nil {
		return channelsRun{}, err
	}
	defer db.Close()
	if err := seedChannels(ctx, db, n, withSMS, b.now); err != nil {
		return channelsRun{}, err
	}
	sk := &sink{byDomain: map[string]*domainStat{}}
	ln, stop, err := sk.serve()
	if err != nil {
		return channelsRun{}, err
	}
	defer stop()
	tw := &twilioSink{}
	addr, stopTw, err := tw.serve()
	if err != nil {
		return channelsRun{}, err
	}
	defer stopTw()
	fmt.Fprintf(b.log, "bench: channels pass, %d email notices, sms half %v\n", n, withSMS)
	start := time.Now()
	r, err := b.scan(ctx, name, "run", b.runArgs(b.cfg.batches[0]), []string{"SCAN_CONFIG=" + policy,
		"SCAN_SENDER=smtp", "SMTP_URL=smtp://" + ln.Addr().String(),
		"TWILIO_ACCOUNT_SID=" + channelsAccount, "TWILIO_AUTH_TOKEN=bench-token", "TWILIO_FROM=+15005550006",
		"TWILIO_API_URL=http://" + addr, "SCAN_TWILIO_STATUS_CALLBACK=https://hooks.example.com/events/twilio"})
	if err != nil {
		return channelsRun{}, err
	}
	sk.mu.Lock()
	es := sk.byDomain["mail.example"]
	sk.mu.Unlock()
	tw.mu.Lock()
	defer tw.mu.Unlock()
	want := map[bool]int{false: 0, true: n}[withSMS]
	if es == nil || es.n != n || tw.n != want || r.int("sent") != n+want {
		return channelsRun{}, fmt.Errorf("channels pass: %v email, %d sms, summary %v", es, tw.n, r.summary)
	}
	cr := channelsRun{emailTook: es.last.Sub(start), sms: tw.n, r: r}
	if tw.n > 0 {
		cr.smsTook = tw.last.Sub(start)
	}
	return cr, nil
}

func seedChannels(ctx context.Context, db *sql.DB, n int, withSMS bool, now time.Time) error {
	if _, err := db.ExecContext(ctx, SubscriptionSeedChannels, n, withSMS, now); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	_, err := db.ExecContext(ctx, SubscriptionAnalyze)
	return err
}
