package send_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"scan/internal/provider/ses"
	"scan/internal/send"
)

// countingServer is a TLS endpoint that counts the connections clients
// open to it (ConnState StateNew: one TLS handshake each) and answers
// every request after a short delay, so that requests overlap as they do
// at a provider's latency.
type countingServer struct {
	srv     *httptest.Server
	opened  atomic.Int64
	served  atomic.Int64
	protoMu sync.Mutex
	protos  map[string]int // requests by protocol ("HTTP/1.1", "HTTP/2.0")
}

// newCountingServer starts the endpoint; h2 offers HTTP/2 through ALPN,
// as most provider endpoints do.
func newCountingServer(t *testing.T, h2 bool, answer func(w http.ResponseWriter)) *countingServer {
	t.Helper()
	c := &countingServer{protos: map[string]int{}}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		c.protoMu.Lock()
		c.protos[r.Proto]++
		c.protoMu.Unlock()
		// The provider's latency: what makes requests overlap, not a
		// synchronisation.
		time.Sleep(2 * time.Millisecond)
		c.served.Add(1)
		answer(w)
	}))
	c.srv.EnableHTTP2 = h2
	c.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.opened.Add(1)
		}
	}
	c.srv.StartTLS()
	t.Cleanup(c.srv.Close)
	return c
}

// roots returns a pool that trusts only the server's certificate.
func (c *countingServer) roots() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.srv.Certificate())
	return p
}

// pem returns the server's certificate in PEM, as an operator's
// AWS_CA_BUNDLE or SSL_CERT_FILE holds it.
func (c *countingServer) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.srv.Certificate().Raw})
}

func (c *countingServer) protocols() string {
	c.protoMu.Lock()
	defer c.protoMu.Unlock()
	return fmt.Sprint(c.protos)
}

// sendAll sends n notices through s in waves of `workers` at once, each
// wave after the previous one has finished, as the Dispatcher's workers
// do whenever every send in flight ends together (a batch boundary, a
// bucket that was empty): all connections go idle at the same moment, and
// a transport that keeps fewer idle ones opens new ones for the next
// wave. It fails the test on any error.
func sendAll(t *testing.T, s send.Sender, n, workers int) {
	t.Helper()
	r := newRenderer(t)
	msgs := make([]*send.Message, n)
	for i := range n {
		msgs[i] = render(t, r, notice(i+1, "example.org"))
	}
	errs := make([]error, n)
	for start := 0; start < n; start += workers {
		var wg sync.WaitGroup
		for i := start; i < min(start+workers, n); i++ {
			wg.Go(func() { _, errs[i] = s.Send(t.Context(), msgs[i]) })
		}
		wg.Wait()
	}
	failed := 0
	for _, err := range errs {
		if err != nil {
			if failed == 0 {
				t.Errorf("send: %v", err)
			}
			failed++
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d sends failed", failed, n)
	}
}

// tlsSender is a sender under test against a countingServer: the
// server's answer to every request, and how to make the sender trust it.
type tlsSender struct {
	name   string
	answer func(http.ResponseWriter)
	make   func(t *testing.T, c *countingServer) send.Sender
}

// tlsSenders are the http and ses senders, sized for concurrency.
func tlsSenders(concurrency int) []tlsSender {
	return []tlsSender{
		{"http", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"prov-1"}`)
		}, func(t *testing.T, c *countingServer) send.Sender {
			h, err := send.NewHTTP(send.HTTPConfig{URL: c.srv.URL + "/send", Pool: concurrency, TLSConfig: &tls.Config{RootCAs: c.roots()}})
			if err != nil {
				t.Fatal(err)
			}
			return h
		}},
		{"ses", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"MessageId":"010001abc-def-000000"}`)
		}, func(t *testing.T, c *countingServer) send.Sender {
			// Trusted the way AWS_CA_BUNDLE is: through the SDK's config
			// loader, whose HTTP client the sender must build on.
			cfg, err := config.LoadDefaultConfig(context.Background(),
				config.WithRegion("eu-west-1"),
				config.WithBaseEndpoint(c.srv.URL),
				config.WithCustomCABundle(bytes.NewReader(c.pem())),
				config.WithCredentialsProvider(staticCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			s, err := ses.NewSender(ses.SenderConfig{AWS: cfg, Pool: concurrency})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
}

// The http and ses senders keep their connections: sending N notices,
// N much larger than the concurrency, opens at most `concurrency` TLS
// connections, over HTTP/1.1 (one request per connection at a time) and
// over HTTP/2 (many per connection). With Go's default transport (two idle
// connections per host) this opened about one connection per notice.
func TestSendersOpenAtMostConcurrencyConnections(t *testing.T) {
	t.Parallel()
	const concurrency, n = 8, 400
	eachTLSSender(t, concurrency, true, func(t *testing.T, name string, h2 bool, c *countingServer, s send.Sender) {
		sendAll(t, s, n, concurrency)
		if got := c.served.Load(); got != n {
			t.Fatalf("%d requests served, want %d", got, n)
		}
		want := "HTTP/1.1"
		if h2 {
			want = "HTTP/2.0"
		}
		if p := c.protocols(); !strings.Contains(p, want) || strings.Count(p, ":") != 1 {
			t.Errorf("requests by protocol %s, want all %s", p, want)
		}
		t.Logf("%s: %d connections for %d notices, %s", name, c.opened.Load(), n, c.protocols())
		if got := c.opened.Load(); got > concurrency {
			t.Errorf("%d connections opened for %d notices at concurrency %d, want at most %d", got, n, concurrency, concurrency)
		}
	})
}

// Neither sender's goroutines grow with the number of notices: after 800
// sends at concurrency 8, and again after 1,600 more, the process has at
// most a few goroutines per connection more than before (the client's read
// and write loops, the test server's handler), however many notices went
// through. A sender that leaked a connection, a response body or a
// goroutine per notice would hold thousands.
//
// Not parallel: it counts every goroutine of the process, and the
// package's parallel tests start only once the sequential ones are done.
func TestSendersGoroutinesBoundedByConcurrency(t *testing.T) {
	const concurrency = 8
	eachTLSSender(t, concurrency, false, func(t *testing.T, _ string, _ bool, _ *countingServer, s send.Sender) {
		// Per connection: the client's read and write loops and the
		// server's conn goroutine; a few more for HTTP/2's frame reader.
		before := runtime.NumGoroutine()
		bound := before + 4*concurrency + 8
		for _, n := range []int{100 * concurrency, 200 * concurrency} {
			sendAll(t, s, n, concurrency)
			if g := runtime.NumGoroutine(); g > bound {
				t.Fatalf("%d goroutines after %d more notices at concurrency %d (%d before the first), want at most %d",
					g, n, concurrency, before, bound)
			}
		}
	})
}

// eachTLSSender runs f as a subtest per sender of tlsSenders and protocol
// (HTTP/1.1, HTTP/2), with a counting TLS server and the sender for it,
// closed at the end; the subtests are parallel if parallel is.
func eachTLSSender(t *testing.T, concurrency int, parallel bool, f func(t *testing.T, name string, h2 bool, c *countingServer, s send.Sender)) {
	for _, sd := range tlsSenders(concurrency) {
		for _, h2 := range []bool{false, true} {
			name := sd.name + "/HTTP1.1"
			if h2 {
				name = sd.name + "/HTTP2"
			}
			t.Run(name, func(t *testing.T) {
				if parallel {
					t.Parallel()
				}
				c := newCountingServer(t, h2, sd.answer)
				s := sd.make(t, c)
				t.Cleanup(func() { _ = s.Close() })
				f(t, name, h2, c, s)
			})
		}
	}
}

func staticCredentials() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "")
}
