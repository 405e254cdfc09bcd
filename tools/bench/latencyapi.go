package main

import (
	"context"
	"database/sql"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// apiStandIn is an HTTPS endpoint in place of a provider's API: it answers
// every request after a fixed latency, SES v2 SendEmail with a MessageId
// and anything else with a JSON id, over HTTP/1.1 (one request per
// connection at a time: the case where connection reuse matters most), and
// counts the connections (TLS handshakes) clients open.
type apiStandIn struct {
	srv      *httptest.Server
	latency  time.Duration
	opened   atomic.Int64
	requests atomic.Int64
	certFile string
	// served sums the time from a request's arrival to its answer; gaps
	// the time from an answer to the next request on the same connection
	// (the client's own time between two sends), both in nanoseconds.
	served, gaps, ngaps atomic.Int64
}

// apiConnKey keys the connection's last answer time in a request context.
type apiConnKey struct{}

func newAPIStandIn(latency time.Duration, dir string) (*apiStandIn, error) {
	a := &apiStandIn{latency: latency}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, apiConnKey{}, new(time.Time))
	}
	a.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			a.opened.Add(1)
		}
	}
	a.srv.StartTLS()
	// The client trusts the stand-in the way an operator trusts a private
	// CA: SSL_CERT_FILE for Go, AWS_CA_BUNDLE for the AWS SDK.
	a.certFile = filepath.Join(dir, "api-standin.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw})
	if err := os.WriteFile(a.certFile, certPEM, 0o644); err != nil {
		a.srv.Close()
		return nil, err
	}
	return a, nil
}

func (a *apiStandIn) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	last, _ := r.Context().Value(apiConnKey{}).(*time.Time)
	if last != nil && !last.IsZero() {
		a.gaps.Add(int64(start.Sub(*last)))
		a.ngaps.Add(1)
	}
	_, _ = io.Copy(io.Discard, r.Body)
	n := a.requests.Add(1)
	// The provider's latency, from the request's arrival to its answer.
	time.Sleep(time.Until(start.Add(a.latency)))
	w.Header().Set("Content-Type", "application/json")
	if strings.HasPrefix(r.URL.Path, "/v2/email/outbound-emails") {
		fmt.Fprintf(w, `{"MessageId":"0100019bench-%012d-000000"}`, n)
	} else {
		fmt.Fprintf(w, `{"id":"bench-%d"}`, n)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	done := time.Now()
	a.served.Add(int64(done.Sub(start)))
	if last != nil {
		*last = done
	}
}

func (a *apiStandIn) close() { a.srv.Close() }

// senderEnv is the environment of bin/scan for one sender against a.
func (a *apiStandIn) senderEnv(sender string) []string {
	env := []string{"SCAN_SENDER=" + sender, "SSL_CERT_FILE=" + a.certFile, "AWS_CA_BUNDLE=" + a.certFile}
	switch sender {
	case "http":
		return append(env, "SCAN_HTTP_URL="+a.srv.URL+"/send")
	default:
		return append(env,
			"AWS_REGION=eu-west-1",
			"AWS_ACCESS_KEY_ID=AKIDEXAMPLE",
			"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
			"AWS_ENDPOINT_URL_SESV2="+a.srv.URL,
			"AWS_CONFIG_FILE=/nonexistent",
			"AWS_SHARED_CREDENTIALS_FILE=/nonexistent",
			"AWS_EC2_METADATA_DISABLED=true")
	}
}

// latencyAPI runs the http and ses senders through the real bin/scan
// against the stand-in at each concurrency, and reports notices/s against
// the ideal concurrency / latency, the connections opened and the peak RSS.
func (b *bench) latencyAPI(ctx context.Context) error {
	n := b.cfg.apiN
	total, due := population(n)
	db, err := b.database(ctx, "bench_latency_api")
	if err != nil {
		return err
	}
	defer db.Close()
	if err := b.seedMix(ctx, db, total); err != nil {
		return err
	}
	api, err := newAPIStandIn(b.cfg.apiLatency, b.cfg.work)
	if err != nil {
		return err
	}
	defer api.close()
	for _, conc := range b.cfg.apiConcurrency {
		policy, err := b.writePolicy(fmt.Sprintf("latency-api-%d.yaml", conc), strings.Replace(policyThroughput, "concurrency: 16", fmt.Sprintf("concurrency: %d", conc), 1))
		if err != nil {
			return err
		}
		for _, sender := range []string{"http", "ses"} {
			if err := b.latencyAPIPass(ctx, db, api, sender, conc, due, policy); err != nil {
				return err
			}
		}
	}
	return nil
}

// latencyAPIPass is one first pass of due notices through sender at
// concurrency conc; the pass at the highest concurrency is profiled.
func (b *bench) latencyAPIPass(ctx context.Context, db *sql.DB, api *apiStandIn, sender string, conc, due int, policy string) error {
	if _, err := db.ExecContext(ctx, LedgerTruncate); err != nil {
		return err
	}
	env := append([]string{"SCAN_CONFIG=" + policy}, api.senderEnv(sender)...)
	prof := ""
	if conc == slices.Max(b.cfg.apiConcurrency) {
		prof = filepath.Join(b.cfg.work, fmt.Sprintf("latency-api-%s-%d.pprof", sender, conc))
		env = append(env, "SCAN_CPUPROFILE="+prof)
	}
	opened0, req0 := api.opened.Load(), api.requests.Load()
	served0, gaps0, ngaps0 := api.served.Load(), api.gaps.Load(), api.ngaps.Load()
	fmt.Fprintf(b.log, "bench: latency-api: %s sender, %d notices, %s per request, concurrency %d\n", sender, due, api.latency, conc)
	self0 := selfCPU()
	r, err := b.scan(ctx, "bench_latency_api", "run", b.runArgs(b.cfg.batches[0]), env)
	if err != nil {
		return err
	}
	standInCPU := selfCPU() - self0
	opened, reqs := api.opened.Load()-opened0, api.requests.Load()-req0
	if r.int("sent") != due || int(reqs) != due {
		return fmt.Errorf("latency-api %s pass sent %d, the stand-in got %d requests; want %d", sender, r.int("sent"), reqs, due)
	}
	rate := float64(due) / r.wall.Seconds()
	ideal := float64(conc) / api.latency.Seconds()
	served := float64(api.served.Load()-served0) / float64(due) / 1e6
	gap := float64(api.gaps.Load()-gaps0) / float64(max(api.ngaps.Load()-ngaps0, 1)) / 1e6
	b.add(figure{fmt.Sprintf("latency-api: %s sender, %s per request over TLS, concurrency %d (N=%d)", sender, api.latency, conc, due),
		fmt.Sprintf("%.0f notices/s (%.2f s, pass %.2f s; %d TLS connections; peak RSS %.1f MiB (%s); stand-in %.1f ms per request, client %.1f ms between an answer and the connection's next request; CPU per notice: scan %.0f us, PostgreSQL %.0f us, stand-in %.0f us)",
			rate, r.wall.Seconds(), float64(r.int("duration_ms"))/1000, opened, float64(r.maxRSS)/1024, r.mem, served, gap,
			usPer(r.cpu, due), usPer(r.pgCPU, due), usPer(standInCPU, due)),
		fmt.Sprintf("%.0f notices/s ideal (concurrency / latency)", ideal),
		fmt.Sprintf("%.2fx the ideal", rate/ideal),
		fmt.Sprintf("at least 0.85x; at most %d connections; RSS at most 64 MiB", conc)})
	if prof != "" {
		b.profile(ctx, prof, fmt.Sprintf("the latency-api %s pass at concurrency %d", sender, conc))
	}
	return nil
}

// usPer is d over n notices, in microseconds.
func usPer(d time.Duration, n int) float64 {
	return float64(d.Microseconds()) / float64(max(n, 1))
}
