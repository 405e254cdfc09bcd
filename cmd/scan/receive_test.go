package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"scan/internal/devpg"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/pgtest"
)

const (
	recvUser = "hook"
	recvPass = "recv-pass-Zq81x"
)

// Configuration mistakes of scan receive exit 2 naming the setting,
// before any connection, and print no secret.
func TestReceiveConfigErrors(t *testing.T) {
	t.Parallel()
	base := map[string]string{"DATABASE_URL": "host=/nonexistent dbname=x", "POSTMARK_WEBHOOK_USER": recvUser, "POSTMARK_WEBHOOK_PASSWORD": recvPass}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, c := range []struct {
		vars  map[string]string
		args  []string
		field string
	}{
		{with("POSTMARK_WEBHOOK_USER", "", "POSTMARK_WEBHOOK_PASSWORD", ""), nil, "SNS_TOPIC_ARNS, SENDGRID_WEBHOOK_PUBLIC_KEY, MAILGUN_WEBHOOK_SIGNING_KEY, POSTMARK_WEBHOOK_USER"}, // the registry's order
		{with("POSTMARK_WEBHOOK_PASSWORD", ""), nil, "POSTMARK_WEBHOOK_USER, POSTMARK_WEBHOOK_PASSWORD"},
		{with("SENDGRID_WEBHOOK_PUBLIC_KEY", "bm90IGEga2V5"), nil, "SENDGRID_WEBHOOK_PUBLIC_KEY"},
		{with("SNS_TOPIC_ARNS", "ses-events"), nil, "SNS_TOPIC_ARNS"},
		{with("SCAN_RECEIVE_ADDR", "8080"), nil, "SCAN_RECEIVE_ADDR"},
		{with(), []string{"--listen", "nowhere"}, "--listen"},
		{with("LOG_LEVEL", "loud"), nil, "LOG_LEVEL"},
		{with(), []string{"extra"}, "arguments"},
	} {
		out := runInProcess(t, c.vars, append([]string{"receive"}, c.args...)...)
		if out.code != exitUsage || !strings.HasPrefix(out.stderr, "scan: "+c.field) || strings.Count(out.stderr, "\n") != 1 {
			t.Errorf("%v %v: exit %d, stderr %q; want 2 naming %s", c.vars, c.args, out.code, out.stderr, c.field)
		}
		assertNoSecret(t, out, recvPass)
	}
}

// receiver is one `scan receive` process.
type receiver struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	logs *watcher
	done chan struct{}
}

// watcher keeps what a child writes and signals lines that contain a
// string, as the child writes them.
type watcher struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	waits map[string]chan struct{}
}

func (w *watcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for s, ch := range w.waits {
		if bytes.Contains(w.buf.Bytes(), []byte(s)) {
			close(ch)
			delete(w.waits, s)
		}
	}
	return len(p), nil
}

// on returns a channel closed once the output holds s.
func (w *watcher) on(s string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	if bytes.Contains(w.buf.Bytes(), []byte(s)) {
		close(ch)
		return ch
	}
	if w.waits == nil {
		w.waits = map[string]chan struct{}{}
	}
	w.waits[s] = ch
	return ch
}

func (w *watcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startReceiver runs `scan receive` on addr against dsn and returns once
// it listens.
func startReceiver(t *testing.T, dsn, addr string, env ...string) *receiver {
	t.Helper()
	r := &receiver{t: t, url: "http://" + addr, logs: &watcher{}, done: make(chan struct{})}
	r.cmd = exec.Command(scanBinary(t), "receive", "--listen", addr, "--grace", "20s")
	r.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + dsn, "LOG_LEVEL=info",
		"POSTMARK_WEBHOOK_USER=" + recvUser, "POSTMARK_WEBHOOK_PASSWORD=" + recvPass}
	r.cmd.Env = append(r.cmd.Env, env...)
	r.cmd.Stderr = r.logs
	r.cmd.Stdout = r.logs
	listening := r.logs.on("scan receive: listening")
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { _ = r.cmd.Process.Kill(); <-r.done })
	select {
	case <-listening:
	case <-r.done:
		t.Fatalf("scan receive exited: %s", r.logs)
	case <-time.After(time.Minute):
		t.Fatalf("scan receive does not listen: %s", r.logs)
	}
	return r
}

// post sends one Postmark Delivery of key and returns the status, or 0
// when no answer came (the connection failed).
func (r *receiver) post(client *http.Client, body []byte) int {
	req, err := http.NewRequest(http.MethodPost, r.url+"/events/postmark", bytes.NewReader(body))
	if err != nil {
		r.t.Error(err)
		return 0
	}
	req.SetBasicAuth(recvUser, recvPass)
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// postmarkDelivery is Postmark's Delivery webhook
// (https://postmarkapp.com/developer/webhooks/delivery-webhook) for key.
func postmarkDelivery(key string) []byte {
	return fmt.Appendf(nil, `{"RecordType":"Delivery","ServerID":23,"MessageStream":"outbound","MessageID":"pm-%s","Recipient":"john@example.com","DeliveredAt":"2026-11-30T02:33:54.9070259Z","Details":"Test delivery webhook details","Metadata":{"notice_key":%q}}`, key[:16], key)
}

// quarantine claims n notices (keys of subscriptions 1..n) that a pass
// claimed and died with, and returns their keys.
func quarantine(t *testing.T, f *fixture, n int) []string {
	t.Helper()
	ps, _ := time.Parse("2006-01-02", f.periodStart())
	cs := make([]ledger.Claim, n)
	keys := make([]string, n)
	for i := range cs {
		keys[i] = f.key(subID(i+1), 0, testSecret)
		cs[i] = ledger.Claim{Key: keys[i], Tuple: notice.Tuple{SubscriptionID: subID(i + 1), Kind: testKind, PeriodStart: ps},
			RenewsAt: f.renews, WindowClosesAt: f.renews.Add(-24 * time.Hour), Domain: "example.com", MessageID: f.msgID(subID(i + 1))}
	}
	now := time.Now().UTC()
	if won, err := ledger.Insert(context.Background(), f.db, ledger.ClaimOptions{State: ledger.Claimed, Now: now, RunID: "crashed"}, cs); err != nil || len(won) != n {
		t.Fatalf("claim: %d won, %v", len(won), err)
	}
	return keys
}

// settled returns, per key, the row's state and how many events it kept.
func settled(t *testing.T, f *fixture, keys []string) (map[string]ledger.State, map[string]int) {
	t.Helper()
	states, kept := map[string]ledger.State{}, map[string]int{}
	for _, k := range keys {
		r, err := ledger.Get(context.Background(), f.db, k)
		if err != nil {
			t.Fatal(err)
		}
		states[k] = r.State
	}
	rows, err := f.db.Query(`SELECT notice_key, count(*) FROM notice_evidence GROUP BY notice_key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		kept[k] = n
	}
	return states, kept
}

// SIGKILL while 8 clients post 200 events: every request answered 2xx
// was committed; after the clients retry what got no 2xx against a new
// process, all 200 are settled, none twice.
func TestReceiveKilledWhilePosting(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	keys := quarantine(t, f, 200)
	addr := freeAddr(t)
	r := startReceiver(t, f.dsn, addr)
	var acked sync.Map // key -> true once answered 2xx
	var oks atomic.Int64
	jobs := make(chan string)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				if st := r.post(client, postmarkDelivery(k)); st == http.StatusOK {
					acked.Store(k, true)
					if oks.Add(1) == 70 {
						_ = r.cmd.Process.Signal(syscall.SIGKILL)
					}
				}
			}
		}()
	}
	for _, k := range keys {
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	<-r.done
	states, _ := settled(t, f, keys)
	nAcked := 0
	acked.Range(func(k, _ any) bool {
		nAcked++
		if states[k.(string)] != ledger.Sent {
			t.Errorf("%s was answered 200 but is %s", k, states[k.(string)])
		}
		return true
	})
	if nAcked < 70 || nAcked == 200 {
		t.Fatalf("%d requests answered 200: the kill did not land mid-run", nAcked)
	}
	// The providers retry what got no 2xx.
	r2 := startReceiver(t, f.dsn, addr)
	for _, k := range keys {
		if _, ok := acked.Load(k); ok {
			continue
		}
		if st := r2.post(client, postmarkDelivery(k)); st != http.StatusOK {
			t.Fatalf("retry of %s: %d\n%s", k, st, r2.logs)
		}
	}
	// And one that was acknowledged, whose answer the provider lost.
	if st := r2.post(client, postmarkDelivery(keys[0])); st != http.StatusOK {
		t.Fatalf("replay: %d", st)
	}
	states, kept := settled(t, f, keys)
	for _, k := range keys {
		if states[k] != ledger.Sent || kept[k] != 1 {
			t.Errorf("%s: %s with %d events kept, want sent with 1", k, states[k], kept[k])
		}
	}
	t.Logf("killed after %d answers 200; %d retried", nAcked, 200-nAcked)
}

// PostgreSQL stopped: requests are answered 5xx and nothing is lost;
// once it is back, the providers' retries are applied.
func TestReceiveDatabaseDown(t *testing.T) {
	t.Parallel()
	srv, err := devpg.Start(context.Background(), devpg.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	f := newFixture(t, 0, srv.DSN())
	keys := quarantine(t, f, 2)
	pgctl := func(args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(srv.BinDir(), "pg_ctl"), append([]string{"-D", filepath.Join(srv.Dir(), "data"), "-w", "-t", "120"}, args...)...)
		cmd.Env = append(os.Environ(), "LANG=C", "LC_ALL=C")
		if os.Geteuid() == 0 {
			fi, err := os.Stat(filepath.Join(srv.Dir(), "data"))
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: st.Uid, Gid: st.Gid}}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pg_ctl %v: %v\n%s", args, err, out)
		}
	}
	r := startReceiver(t, f.dsn, freeAddr(t))
	client := &http.Client{Timeout: 30 * time.Second}
	if st := r.post(client, postmarkDelivery(keys[0])); st != http.StatusOK {
		t.Fatalf("with the database up: %d", st)
	}
	f.db.Close()
	pgctl("stop", "-m", "fast")
	if st := r.post(client, postmarkDelivery(keys[1])); st/100 != 5 {
		t.Fatalf("with the database down: %d, want 5xx\n%s", st, r.logs)
	}
	resp, err := client.Get(r.url + "/readyz")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz with the database down: %v %v", resp, err)
	}
	resp.Body.Close()
	pgctl("start", "-l", filepath.Join(srv.Dir(), "restart.log"))
	t.Cleanup(func() { pgctl("stop", "-m", "fast") })
	// The provider retries; the pool's first connections may still be the
	// broken ones, which database/sql replaces.
	st := 0
	for range 5 {
		if st = r.post(client, postmarkDelivery(keys[1])); st == http.StatusOK {
			break
		}
	}
	if st != http.StatusOK {
		t.Fatalf("after the restart: %d\n%s", st, r.logs)
	}
	f.db = pgtest.Open(t, srv.DSN())
	states, kept := settled(t, f, keys)
	for _, k := range keys {
		if states[k] != ledger.Sent || kept[k] != 1 {
			t.Errorf("%s: %s with %d events, want sent with 1", k, states[k], kept[k])
		}
	}
}

// A 40 MiB body is refused with 413, and the server goes on serving.
func TestReceiveHugeBody(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	keys := quarantine(t, f, 1)
	r := startReceiver(t, f.dsn, freeAddr(t))
	req, err := http.NewRequest(http.MethodPost, r.url+"/events/postmark", io.LimitReader(zeros{}, 40<<20))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 40 << 20
	req.SetBasicAuth(recvUser, recvPass)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("40 MiB: %d, want 413", resp.StatusCode)
		}
	} else if !strings.Contains(r.logs.String(), "body over the limit") {
		// The server may close the connection while the client still
		// writes; then the refusal is in its log.
		t.Fatalf("40 MiB: %v, and no refusal logged:\n%s", err, r.logs)
	}
	if st := r.post(http.DefaultClient, postmarkDelivery(keys[0])); st != http.StatusOK {
		t.Fatalf("after the 40 MiB body: %d\n%s", st, r.logs)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// SIGTERM lets a request in flight finish (its events committed and
// answered 200) before the process exits 0.
func TestReceiveSIGTERMDrains(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	keys := quarantine(t, f, 1)
	r := startReceiver(t, f.dsn, freeAddr(t))
	body := postmarkDelivery(keys[0])
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, r.url+"/events/postmark", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	req.SetBasicAuth(recvUser, recvPass)
	// With Expect: 100-continue the client sends the body only once the
	// server's handler reads it: the first Write below returns when the
	// request is in the handler's hands, not merely in the client's
	// buffer (else SIGTERM could close the listener before the server
	// accepted the connection). No timeout sends it earlier.
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Hour}}
	answered := make(chan int, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	if _, err := pw.Write(body[:10]); err != nil { // the handler is reading: the request is in flight
		t.Fatal(err)
	}
	draining := r.logs.on("draining in-flight requests")
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-draining
	if _, err := pw.Write(body[10:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if st := <-answered; st != http.StatusOK {
		t.Fatalf("the request in flight at SIGTERM: %d\n%s", st, r.logs)
	}
	<-r.done
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d after SIGTERM\n%s", code, r.logs)
	}
	if states, _ := settled(t, f, keys); states[keys[0]] != ledger.Sent {
		t.Fatalf("the request's event: %s, want sent", states[keys[0]])
	}
}
