package main

import (
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// httpsStandIn is a TLS endpoint in place of a provider's API (the http
// sender's or SES's), whose certificate only a CA file the pass is given
// makes trusted. It counts the connections opened to it.
type httpsStandIn struct {
	srv      *httptest.Server
	certFile string
	opened   atomic.Int64
	requests atomic.Int64
}

func newHTTPSStandIn(t *testing.T) *httpsStandIn {
	t.Helper()
	s := &httpsStandIn{}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n := s.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/v2/email/outbound-emails") {
			_, _ = fmt.Fprintf(w, `{"MessageId":"0100019abc%04d-000000"}`, n)
			return
		}
		_, _ = fmt.Fprintf(w, `{"id":"prov-%d"}`, n)
	}))
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.opened.Add(1)
		}
	}
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.certFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(s.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// The http sender trusts a private CA through SSL_CERT_FILE, and the ses
// sender through AWS_CA_BUNDLE alone (which the SDK's loader reads); both
// send every notice over at most `concurrency` (8 in the test policy)
// connections, kept from one request to the next.
func TestHTTPSSendersTrustAndReuse(t *testing.T) {
	t.Parallel()
	const n, concurrency = 60, 8
	for _, tc := range []struct {
		name string
		env  func(f *fixture, s *httpsStandIn) []string
	}{
		{"http", func(f *fixture, s *httpsStandIn) []string {
			return f.env("SCAN_SENDER=http", "SCAN_HTTP_URL="+s.srv.URL+"/send", "SSL_CERT_FILE="+s.certFile)
		}},
		{"ses", func(f *fixture, s *httpsStandIn) []string {
			return f.env("SCAN_SENDER=ses",
				"AWS_REGION=eu-west-1",
				"AWS_ACCESS_KEY_ID=AKIDEXAMPLE",
				"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
				"AWS_ENDPOINT_URL_SESV2="+s.srv.URL,
				"AWS_CA_BUNDLE="+s.certFile,
				"AWS_CONFIG_FILE=/nonexistent",
				"AWS_SHARED_CREDENTIALS_FILE=/nonexistent",
				"AWS_EC2_METADATA_DISABLED=true")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, n, "")
			s := newHTTPSStandIn(t)
			if sum := f.mustRun(tc.env(f, s)); sum.Sent != n {
				t.Fatalf("summary %+v, want %d sent", sum, n)
			}
			if got := s.requests.Load(); got != n {
				t.Fatalf("%d requests for %d notices", got, n)
			}
			if got := s.opened.Load(); got > concurrency {
				t.Errorf("%d TLS connections for %d notices at concurrency %d", got, n, concurrency)
			}
		})
	}
}
