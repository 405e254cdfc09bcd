package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// Statements of the receive scenario.
const (
	// LedgerSentCount counts the rows settled sent.
	LedgerSentCount = `SELECT count(*) FROM notice_ledger WHERE state = 'sent'`
	// EvidenceCount counts the provider events kept.
	EvidenceCount = `SELECT count(*) FROM notice_evidence`
	// EvidenceTruncate empties the evidence and the ledger, so that the
	// same claims can be settled again by another reader.
	EvidenceTruncate = `TRUNCATE notice_ledger, notice_evidence CASCADE`
)

const (
	receiveBatch = 500 // SendGrid events per POST
	snsTopic     = "arn:aws:sns:us-east-1:123456789012:ses-events"
)

// receiveKey is the notice key of claim i of the scenario.
func receiveKey(i int) string { return fmt.Sprintf("%032x%032x", i+1, i+1) }

// seedClaims inserts n claims in quarantine (state claimed, as a pass
// that died leaves them), through package ledger (which makes the
// partitions), on x, a connection of ledger.Open's (binary parameters).
func (b *bench) seedClaims(ctx context.Context, x *sqlx.DB, n int) error {
	ps := b.now.Truncate(24 * time.Hour).Add(48 * time.Hour)
	for lo := 0; lo < n; lo += 1000 {
		cs := make([]ledger.Claim, 0, 1000)
		for i := lo; i < min(lo+1000, n); i++ {
			k := receiveKey(i)
			cs = append(cs, ledger.Claim{Key: k, Tuple: notice.Tuple{SubscriptionID: fmt.Sprintf("r_%09d", i), Kind: kind, PeriodStart: ps},
				RenewsAt: ps.Add(2 * time.Hour), WindowClosesAt: ps.Add(-22 * time.Hour), Domain: "d.example", MessageID: k[:32] + "@notices.example.com"})
		}
		if _, err := ledger.Insert(ctx, x, ledger.ClaimOptions{State: ledger.Claimed, Now: b.now, RunID: "bench-crashed"}, cs); err != nil {
			return fmt.Errorf("seed claims: %w", err)
		}
	}
	return nil
}

// recordSent records claims from..from+n-1 as sent by the pass that
// claimed them, as a pass that got the provider's answer does: the events
// that follow (delivery) are kept as evidence, and the quarantine stays
// small, as in production.
func (b *bench) recordSent(ctx context.Context, x *sqlx.DB, from, n int) error {
	var outs []ledger.Outcome
	for i := from; i < from+n; i++ {
		outs = append(outs, ledger.Outcome{Key: receiveKey(i), State: ledger.Sent, SentAt: b.now, ProviderID: fmt.Sprintf("ses-%d", i), Attempts: 1})
		if len(outs) == 1000 || i == from+n-1 {
			if _, err := ledger.RecordOutcomes(ctx, x, "bench-crashed", b.now, outs); err != nil {
				return fmt.Errorf("record outcomes: %w", err)
			}
			outs = outs[:0]
		}
	}
	return nil
}

// sendgridBatches returns the SendGrid "delivered" events of claims
// 0..n-1 as JSON arrays of receiveBatch events, as SendGrid posts them
// (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/event).
func sendgridBatches(n int) [][]byte {
	var out [][]byte
	for lo := 0; lo < n; lo += receiveBatch {
		var b bytes.Buffer
		b.WriteByte('[')
		for i := lo; i < min(lo+receiveBatch, n); i++ {
			if i > lo {
				b.WriteByte(',')
			}
			k := receiveKey(i)
			fmt.Fprintf(&b, `{"email":"user%d@d.example","timestamp":1764468000,"smtp-id":"<%s@notices.example.com>","event":"delivered","category":"renewal","sg_event_id":"ev%d","sg_message_id":"sg%d.filter0001.16648.5515E0B88.0","response":"250 OK","notice_key":%q}`, i, k[:32], i, i, k)
		}
		b.WriteByte(']')
		out = append(out, b.Bytes())
	}
	return out
}

// receiver is a running `scan receive`.
type receiver struct {
	cmd     *exec.Cmd
	url     string
	done    chan struct{}
	mem     memPeak
	stopMem func()
}

// startReceiver runs bin/scan receive on a loopback port with extra in its
// environment and waits until /readyz answers.
func (b *bench) startReceiver(ctx context.Context, db string, extra []string) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.OpenFile(filepath.Join(b.cfg.work, "receive.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	c := exec.CommandContext(ctx, b.cfg.scan, "receive", "--listen", addr, "--max-in-flight", strconv.Itoa(b.cfg.receiveClients))
	c.Env = append(append([]string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + b.dsn(db), "LOG_LEVEL=warn"}, extra...), goRuntimeEnv()...)
	c.Stderr, c.Stdout = logf, logf
	if err := c.Start(); err != nil {
		return nil, err
	}
	r := &receiver{cmd: c, url: "http://" + addr, done: make(chan struct{})}
	r.stopMem = sampleMemory(c.Process.Pid, time.Now(), &r.mem)
	go func() { _ = c.Wait(); close(r.done) }()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if resp, err := http.Get(r.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
		select {
		case <-r.done:
			return nil, fmt.Errorf("scan receive exited (log: %s)", logf.Name())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = c.Process.Kill()
			return nil, fmt.Errorf("scan receive not ready within 30s")
		}
	}
}

// stop reads the receiver's peak RSS (VmHWM, in KiB), then sends SIGTERM
// and waits for the exit. Not getrusage's ru_maxrss: os/exec starts the
// child with vfork, and Linux carries the parent's high-water mark at the
// exec into the child's ru_maxrss, so a bench holding its prepared
// requests (tens of MiB) would be counted as the receiver's.
func (r *receiver) stop() int64 {
	hwm := vmHWM(r.cmd.Process.Pid)
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	<-r.done
	r.stopMem()
	return hwm
}

// vmHWM returns the VmHWM of pid in KiB, 0 when it cannot be read.
func vmHWM(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if f := bytes.Fields(line); len(f) >= 2 && string(f[0]) == "VmHWM:" {
			n, _ := strconv.ParseInt(string(f[1]), 10, 64)
			return n
		}
	}
	return 0
}

// request is one prepared POST.
type request struct {
	path   string
	body   []byte
	header http.Header
}

// postAll posts every request from clients goroutines and returns
// the wall time; any answer but 200 is an error.
func postAll(ctx context.Context, base string, reqs []request, clients int) (time.Duration, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: time.Minute}
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) || failed.Load() != nil {
					return
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+reqs[i].path, bytes.NewReader(reqs[i].body))
				req.Header = reqs[i].header.Clone()
				resp, err := client.Do(req)
				if err != nil {
					failed.Store(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Store(fmt.Errorf("%s: %d %s", reqs[i].path, resp.StatusCode, b))
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// signedSendGrid signs each batch as SendGrid's signed Event Webhook does
// (ECDSA P-256 over timestamp + body) and returns the requests and the
// base64 DER public key.
func signedSendGrid(batches [][]byte) ([]request, string, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return nil, "", err
	}
	var reqs []request
	for _, body := range batches {
		ts := "1764468000"
		h := sha256.Sum256(append([]byte(ts), body...))
		sig, err := ecdsa.SignASN1(rand.Reader, k, h[:])
		if err != nil {
			return nil, "", err
		}
		hd := http.Header{}
		hd.Set("Content-Type", "application/json")
		hd.Set("X-Twilio-Email-Event-Webhook-Signature", base64.StdEncoding.EncodeToString(sig))
		hd.Set("X-Twilio-Email-Event-Webhook-Timestamp", ts)
		reqs = append(reqs, request{"/events/sendgrid", body, hd})
	}
	return reqs, base64.StdEncoding.EncodeToString(der), nil
}

// certHost serves a self-signed certificate on loopback, as
// sns.<region>.amazonaws.com serves SNS's, counting fetches.
type certHost struct {
	key     *rsa.PrivateKey
	url     string
	fetches atomic.Int64
	close   func()
}

func newCertHost() (*certHost, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sns.us-east-1.amazonaws.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return nil, err
	}
	p := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &certHost{key: k, url: "http://" + ln.Addr().String() + "/SimpleNotificationService-bench.pem"}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.fetches.Add(1)
		_, _ = w.Write(p)
	})}
	go func() { _ = srv.Serve(ln) }()
	h.close = func() { _ = srv.Close() }
	return h, nil
}

// signedSNS returns one SNS Notification per claim from..from+n-1, each carrying an
// SES Delivery event, signed (SignatureVersion 1, as SNS signs by default)
// with h's key over the canonical string of
// https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html.
func signedSNS(h *certHost, from, n int) ([]request, error) {
	var reqs []request
	for i := from; i < from+n; i++ {
		k := receiveKey(i)
		msg := fmt.Sprintf(`{"eventType":"Delivery","mail":{"timestamp":"2026-11-30T02:20:52.240Z","source":"notices@example.com","messageId":"ses-%d","destination":["user%d@d.example"],"tags":{"notice_key":[%q]}},"delivery":{"timestamp":"2026-11-30T02:21:04.133Z","smtpResponse":"250 2.6.0 Message received","reportingMTA":"mta.example.com"}}`, i, i, k)
		m := map[string]string{"Type": "Notification", "MessageId": fmt.Sprintf("msg-%d", i), "TopicArn": snsTopic,
			"Subject": "Amazon SES Email Event Notification", "Message": msg, "Timestamp": "2026-11-30T02:21:04.200Z",
			"SignatureVersion": "1", "SigningCertURL": h.url}
		canon := "Message\n" + m["Message"] + "\nMessageId\n" + m["MessageId"] + "\nSubject\n" + m["Subject"] +
			"\nTimestamp\n" + m["Timestamp"] + "\nTopicArn\n" + m["TopicArn"] + "\nType\n" + m["Type"] + "\n"
		sum := sha1.Sum([]byte(canon))
		sig, err := rsa.SignPKCS1v15(rand.Reader, h.key, crypto.SHA1, sum[:])
		if err != nil {
			return nil, err
		}
		m["Signature"] = base64.StdEncoding.EncodeToString(sig)
		body, _ := json.Marshal(m)
		hd := http.Header{}
		hd.Set("Content-Type", "text/plain; charset=UTF-8")
		hd.Set("X-Amz-Sns-Message-Type", "Notification")
		reqs = append(reqs, request{"/events/ses", body, hd})
	}
	return reqs, nil
}

// receiveScenario: verified SendGrid batches of receiveBatch events
// against `scan reconcile --events` on the same events (each settling the
// same n claims from quarantine), then single signed SNS notifications,
// each settling one more claim, and the receiver's peak RSS over both.
func (b *bench) receiveScenario(ctx context.Context) error {
	n, snsN := b.cfg.receiveN, b.cfg.receiveSNS
	db, err := b.database(ctx, "bench_receive")
	if err != nil {
		return err
	}
	defer db.Close()
	// The ledger's own statements run as scan runs them: ledger.Open's
	// binary parameters (the batch statements send binary arrays).
	ldb, err := ledger.Open(ctx, b.dsn("bench_receive"))
	if err != nil {
		return err
	}
	defer ldb.Close()
	if err := b.seedClaims(ctx, ldb, n); err != nil {
		return err
	}
	batches := sendgridBatches(n)
	file := filepath.Join(b.cfg.work, "sendgrid-events.json")
	if err := os.WriteFile(file, append(bytes.Join(batches, []byte("\n")), '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(b.log, "bench: receive: scan reconcile --format sendgrid over %d events\n", n)
	rec, err := b.scan(ctx, "bench_receive", "reconcile", []string{"--format", "sendgrid", "--events", file}, nil)
	if err != nil {
		return err
	}
	if err := wantSent(ctx, db, n); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	if _, err := db.ExecContext(ctx, EvidenceTruncate); err != nil {
		return err
	}
	// Claims beyond n+snsN (-receive-quarantine) stay in quarantine: the
	// notices whose outcome is unknown that a real ledger holds.
	if err := b.seedClaims(ctx, ldb, n+snsN+b.cfg.receiveQuar); err != nil {
		return err
	}
	if err := b.recordSent(ctx, ldb, n, snsN); err != nil {
		return err
	}
	sg, pub, err := signedSendGrid(batches)
	if err != nil {
		return err
	}
	host, err := newCertHost()
	if err != nil {
		return err
	}
	defer host.close()
	sns, err := signedSNS(host, n, snsN)
	if err != nil {
		return err
	}
	rcv, err := b.startReceiver(ctx, "bench_receive", []string{"SENDGRID_WEBHOOK_PUBLIC_KEY=" + pub,
		"SNS_TOPIC_ARNS=" + snsTopic, "SNS_CERT_HOSTS=127.0.0.1", "SCAN_CPUPROFILE=" + filepath.Join(b.cfg.work, "receive.cpu.pprof")})
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "bench: receive: %d signed SendGrid batches of %d, then %d signed SNS notifications, %d clients\n", len(sg), receiveBatch, snsN, b.cfg.receiveClients)
	sgTook, err := postAll(ctx, rcv.url, sg, b.cfg.receiveClients)
	if err == nil {
		err = wantSent(ctx, db, n+snsN)
	}
	var snsTook time.Duration
	if err == nil {
		snsTook, err = postAll(ctx, rcv.url, sns, b.cfg.receiveClients)
	}
	if err == nil {
		err = wantEvidence(ctx, db, n+snsN)
	}
	rss := rcv.stop()
	if err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	recRate, sgRate := float64(n)/rec.wall.Seconds(), float64(n)/sgTook.Seconds()
	b.add(figure{fmt.Sprintf("receive: %d SendGrid events in signed batches of %d, %d clients", n, receiveBatch, b.cfg.receiveClients),
		fmt.Sprintf("%.0f events/s (%.2f s)", sgRate, sgTook.Seconds()),
		fmt.Sprintf("scan reconcile --format sendgrid --events on the same events: %.0f events/s (%.2f s, process start included)", recRate, rec.wall.Seconds()),
		fmt.Sprintf("%.2fx", sgRate/recRate), ">= 0.8x"})
	b.add(figure{fmt.Sprintf("receive: %d single signed SNS notifications (SignatureVersion 1), each an SES Delivery of a notice the pass recorded sent (kept as evidence), %d claims in quarantine, %d clients", snsN, b.cfg.receiveQuar, b.cfg.receiveClients),
		fmt.Sprintf("%.0f requests/s (%.2f s); certificate fetched %d time(s)", float64(snsN)/snsTook.Seconds(), snsTook.Seconds(), host.fetches.Load()),
		"-", "-", ">= 500 requests/s, certificate cached"})
	b.add(figure{"receive: peak RSS of scan receive over both (VmHWM)", fmt.Sprintf("%.1f MiB (%s)", float64(rss)/1024, rcv.mem), "-", "-", "<= 64 MiB"})
	return nil
}

// wantEvidence checks that exactly n events are kept.
func wantEvidence(ctx context.Context, db *sql.DB, n int) error {
	var got int
	if err := db.QueryRowContext(ctx, EvidenceCount).Scan(&got); err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("%d events kept, want %d", got, n)
	}
	return nil
}

// wantSent checks that exactly n rows are settled sent.
func wantSent(ctx context.Context, db *sql.DB, n int) error {
	var got int
	if err := db.QueryRowContext(ctx, LedgerSentCount).Scan(&got); err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("%d rows sent, want %d", got, n)
	}
	return nil
}
