package main

// Tests against the servers operators run beside scan, not our own fakes:
// Postfix's smtp-sink (an SMTP server that offers PIPELINING, as the large
// providers do) and the Prometheus Pushgateway. Each is a Debian package;
// .ci/run installs it when missing. Outside CI a missing one skips its test
// with the install command; under CI (CI=true) it fails, so a CI machine
// that lost a package cannot pass by skipping.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// peer returns the path of a program from a Debian package, or skips the
// test (fails it under CI) with the command that installs it.
func peer(t *testing.T, name, pkg string, dirs ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range dirs {
		if p := filepath.Join(d, name); isExecutable(p) {
			return p
		}
	}
	msg := fmt.Sprintf("%s not found: apt-get install --no-install-recommends %s (.ci/run does)", name, pkg)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// freePort returns a loopback port nobody listens on at the time of the
// call, for a server that must be given its port on the command line.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// startPeer starts a server process, ended with the test, and waits (at
// most 20s) until ready reports it answers: these servers give no signal
// of their own that their socket is open, so the test asks.
func startPeer(t *testing.T, ready func() bool, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s said:\n%s", filepath.Base(name), out.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for !ready() {
		select {
		case <-exited:
			t.Fatalf("%s exited before it was ready:\n%s", filepath.Base(name), out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 20s:\n%s", filepath.Base(name), out.String())
		}
	}
}

// smtpSink starts Postfix's smtp-sink on a loopback port with extra
// options, dumping every message it accepts into its own file under the
// returned directory, and returns the smtp:// URL and that directory.
func smtpSink(t *testing.T, opts ...string) (url, dumps string) {
	t.Helper()
	bin := peer(t, "smtp-sink", "postfix", "/usr/sbin", "/usr/lib/postfix/sbin")
	// Not under t.TempDir, whose parent only its owner may enter: as root,
	// smtp-sink drops to -u after binding and writes the dumps as that user.
	dumps, err := os.MkdirTemp("", "smtp-sink-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dumps) })
	args := append([]string{}, opts...)
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dumps, 0o777); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-u", u.Username)
	}
	addr := "127.0.0.1:" + freePort(t)
	args = append(args, "-d", filepath.Join(dumps, "%H%M%S."), addr, "64")
	startPeer(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}, bin, args...)
	return "smtp://" + addr, dumps
}

// sinkMessages returns how many messages smtp-sink dumped, by Message-ID.
func sinkMessages(t *testing.T, dir string) map[string]int {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		id := ""
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Message-ID: "); ok {
				id = notice.BareMessageID(v)
				break
			}
		}
		if id == "" {
			t.Fatalf("dump %s has no Message-ID:\n%s", f.Name(), b)
		}
		got[id]++
	}
	return got
}

// Against Postfix's smtp-sink, which offers PIPELINING: every notice goes
// out once, each Message-ID once, and the second pass sends nothing.
func TestPostfixSMTPSinkReceivesEachNoticeOnce(t *testing.T) {
	t.Parallel()
	url, dumps := smtpSink(t)
	const n = 120
	f := newFixture(t, n, "")
	env := f.env("SMTP_URL=" + url)

	s := f.mustRun(env)
	if s.Sent != n || s.Minted != n {
		t.Fatalf("first pass: %+v, want %d minted and sent", s, n)
	}
	got := sinkMessages(t, dumps)
	if len(got) != n {
		t.Fatalf("smtp-sink holds %d distinct Message-IDs, want %d", len(got), n)
	}
	for i := 1; i <= n; i++ {
		if c := got[f.msgID(subID(i))]; c != 1 {
			t.Fatalf("%s: smtp-sink received it %d times, want once", subID(i), c)
		}
	}

	s = f.mustRun(env)
	if s.Sent != 0 || s.Suppressed != n {
		t.Fatalf("second pass: %+v, want nothing sent and %d suppressed", s, n)
	}
	if again := sinkMessages(t, dumps); len(again) != n {
		t.Fatalf("after the second pass smtp-sink holds %d messages, want still %d", len(again), n)
	}
	if c := f.counts(); c[ledger.Sent] != n {
		t.Fatalf("ledger: %v, want %d sent", c, n)
	}
}

// smtp-sink refusing a command: 4xx before acceptance is retry, 5xx is
// failed. A refused recipient leaves no message behind (smtp-sink writes
// its dump as the data arrives, so a refusal at the end of data does).
func TestPostfixSMTPSinkRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		opts   []string
		state  ledger.State
		noData bool // refused before the data was sent
	}{
		{"4xx on RCPT", []string{"-r", "RCPT"}, ledger.Retry, true},
		{"5xx on RCPT", []string{"-f", "RCPT"}, ledger.Failed, true},
		{"5xx at end of data", []string{"-f", "."}, ledger.Failed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, dumps := smtpSink(t, tc.opts...)
			const n = 6
			f := newFixture(t, n, "")
			s := f.mustRun(f.env("SMTP_URL=" + url))
			if s.Sent != 0 {
				t.Fatalf("summary %+v: nothing should be sent", s)
			}
			if c := f.counts(); c[tc.state] != n {
				t.Fatalf("ledger: %v, want %d %s", c, n, tc.state)
			}
			if got := sinkMessages(t, dumps); tc.noData && len(got) != 0 {
				t.Fatalf("smtp-sink kept %d messages it refused", len(got))
			}
		})
	}
}

// The pass's metrics, pushed to a real Pushgateway, are there to scrape
// under job="scan" and the pass's shard, with the counts of the summary.
func TestRealPushgatewayHoldsThePassMetrics(t *testing.T) {
	t.Parallel()
	bin := peer(t, "prometheus-pushgateway", "prometheus-pushgateway")
	addr := "127.0.0.1:" + freePort(t)
	base := "http://" + addr
	startPeer(t, func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, bin, "--web.listen-address="+addr)

	const n = 15
	f := newFixture(t, n, "")
	s := f.mustRun(f.env("PUSHGATEWAY_URL=" + base))
	if s.Sent != n {
		t.Fatalf("summary %+v, want %d sent", s, n)
	}

	families := scrape(t, base+"/metrics")
	sent := sample(t, families, "scan_pass_notices", map[string]string{"job": "scan", "shard": "0", "result": "sent"})
	if sent != n {
		t.Fatalf(`scan_pass_notices{result="sent"} = %v, want %d`, sent, n)
	}
	if ok := sample(t, families, "scan_pass_success", map[string]string{"job": "scan", "shard": "0"}); ok != 1 {
		t.Fatalf("scan_pass_success = %v, want 1", ok)
	}
	if ts := sample(t, families, "push_time_seconds", map[string]string{"job": "scan", "shard": "0"}); ts <= 0 {
		t.Fatalf("push_time_seconds = %v: the Pushgateway recorded no push of job=scan shard=0", ts)
	}
}

// scrape reads a Prometheus text exposition.
func scrape(t *testing.T, url string) map[string][]*model.Sample {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	dec := expfmt.SampleDecoder{
		Dec:  expfmt.NewDecoder(bytes.NewReader(body), expfmt.NewFormat(expfmt.TypeTextPlain)),
		Opts: &expfmt.DecodeOptions{Timestamp: model.Now()},
	}
	out := map[string][]*model.Sample{}
	for {
		var v model.Vector
		if err := dec.Decode(&v); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode %s: %v\n%s", url, err, body)
		}
		for _, s := range v {
			name := string(s.Metric[model.MetricNameLabel])
			out[name] = append(out[name], s)
		}
	}
	return out
}

// sample returns the value of the one sample of name whose labels include
// want, failing the test when there is none.
func sample(t *testing.T, families map[string][]*model.Sample, name string, want map[string]string) float64 {
	t.Helper()
next:
	for _, s := range families[name] {
		for k, v := range want {
			if string(s.Metric[model.LabelName(k)]) != v {
				continue next
			}
		}
		return float64(s.Value)
	}
	t.Fatalf("no %s%v among the Pushgateway's metrics (%d samples of that name)", name, want, len(families[name]))
	return 0
}
